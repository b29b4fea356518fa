
document.getElementById("filter").addEventListener("input", function (e) {
  var q = e.target.value.toLowerCase();
  document.querySelectorAll("[data-filter]").forEach(function (el) {
    el.style.display = (q && el.textContent.toLowerCase().indexOf(q) < 0) ? "none" : "";
  });
});
