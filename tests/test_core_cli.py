"""The command line: exit codes, policy options, layered config, pragmas, partial results, rules."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from conftest import REPO, require, run_envcheck

CUDA12 = "torch==2.5.1+cu121\n"
CLEAN = "--index-url https://download.pytorch.org/whl/cu130\ntorch==2.9.0+cu130\n"


def _req(tmp: Path, text: str, name: str = "requirements.txt") -> Path:
    path = tmp / name
    path.write_text(text)
    return path


def test_exit_codes(tmp_path: Path) -> None:
    clean = _req(tmp_path, CLEAN, "requirements-clean.txt")
    bad = _req(tmp_path, CUDA12, "requirements-bad.txt")
    assert run_envcheck(str(clean)).returncode == 0
    assert run_envcheck(str(bad)).returncode == 1
    assert run_envcheck("--fail-on", "never", str(bad)).returncode == 0
    warn = _req(tmp_path, "transformers\n", "requirements-warn.txt")
    assert run_envcheck(str(warn)).returncode == 0
    assert run_envcheck("--fail-on", "warn", str(warn)).returncode == 1
    proc = run_envcheck("--no-such-flag")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    missing = run_envcheck(str(tmp_path / "nope.txt"), str(bad), "--format", "json")
    assert missing.returncode == 2
    data = json.loads(missing.stdout)
    assert len(data["targets"]) == 2 and data["targets"][1]["findings"]


def test_nothing_given_user_is_modified(tmp_path: Path) -> None:
    bad = _req(tmp_path, CUDA12)
    before = (bad.read_bytes(), bad.stat().st_mtime_ns)
    run_envcheck(str(bad), "-o", str(tmp_path / "out.json"), "--format", "json")
    assert (bad.read_bytes(), bad.stat().st_mtime_ns) == before


def test_ignore_from_command_line_config_file_and_environment(tmp_path: Path) -> None:
    bad = _req(tmp_path, CUDA12)
    assert run_envcheck("--ignore", "G1-cuda12-local-version", str(bad)).returncode == 0
    assert run_envcheck("--ignore", "G1", str(bad)).returncode == 0
    (tmp_path / ".envcheck.toml").write_text('fail-on = "fail"\n[[ignore]]\nrule = "G1-cuda12-local-version"\nreason = "legacy box"\n')
    (tmp_path / ".git").mkdir()
    proc = run_envcheck("--format", "json", str(bad), cwd=tmp_path)
    data = json.loads(proc.stdout)
    assert proc.returncode == 0
    assert data["targets"][0]["suppressed"][0]["reason"] == "legacy box"
    assert run_envcheck(str(bad), cwd=tmp_path, env={"ENVCHECK_FAIL_ON": "never"}).returncode == 0


def test_pyproject_tool_table_and_severity_override(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text('[tool.envcheck]\nfail-on = "warn"\n[tool.envcheck.severity]\n"G1-cuda12-local-version" = "warn"\n')
    bad = _req(tmp_path, CUDA12)
    data = json.loads(run_envcheck("--format", "json", str(bad), cwd=tmp_path).stdout)
    statuses = [f["status"] for f in data["targets"][0]["findings"] if f["rule"] == "G1-cuda12-local-version"]
    assert statuses == ["WARN"] and data["exit_code"] == 1


def test_bad_config_is_a_usage_error(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg.toml"
    cfg.write_text('fail-on = "sometimes"\n')
    proc = run_envcheck("--config", str(cfg), str(_req(tmp_path, CLEAN)))
    assert proc.returncode == 2 and "fail-on" in proc.stderr and "Traceback" not in proc.stderr


def test_inline_pragma_suppresses_the_next_line_only(tmp_path: Path) -> None:
    req = _req(tmp_path, "# envcheck: ignore=G1-cuda12-local-version pinned for the x86 CI box\ntorch==2.5.1+cu121\ntorchvision==0.20.1+cu121\n")
    data = json.loads(run_envcheck("--format", "json", str(req)).stdout)
    target = data["targets"][0]
    assert [f["location"]["line"] for f in target["findings"] if f["rule"] == "G1-cuda12-local-version"] == [3]
    assert target["suppressed"][0]["reason"] == "pinned for the x86 CI box"


def test_project_folder_discovery(tmp_path: Path) -> None:
    (tmp_path / "svc").mkdir()
    _req(tmp_path / "svc", CUDA12)
    _req(tmp_path, CLEAN, "requirements-dev.txt")
    (tmp_path / ".venv").mkdir()
    _req(tmp_path / ".venv", CUDA12)
    data = json.loads(run_envcheck("--format", "json", str(tmp_path)).stdout)
    targets = sorted(t["target"] for t in data["targets"])
    assert targets == sorted([str(tmp_path / "requirements-dev.txt"), str(tmp_path / "svc" / "requirements.txt")])
    data = json.loads(run_envcheck("--format", "json", cwd=tmp_path / "svc").stdout)
    assert data["summary"]["G1"] == "FAIL"


def test_rules_command_lists_and_explains() -> None:
    listing = run_envcheck("rules")
    assert listing.returncode == 0
    for gotcha in ("G1", "G2", "G9", "ARCH"):
        assert f" {gotcha} " in listing.stdout
    g2 = run_envcheck("rules", "G2")
    assert "HAS_FLASH_ATTENTION" in g2.stdout and "Fix:" in g2.stdout
    assert run_envcheck("rules", "G42").returncode == 2
    data = json.loads(run_envcheck("rules", "--format", "json").stdout)
    assert all(r["explanation"] and r["gotcha"] for r in data)


def test_console_script_and_module_entry_point() -> None:
    exe = shutil.which("envcheck")
    require(exe is not None, "envcheck console script not installed (pip install -e .)")
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.startswith("envcheck ")
    assert run_envcheck("--version").returncode == 0


def test_rules_doc_is_generated_from_the_registry() -> None:
    doc = (REPO / "docs" / "rules.md").read_text()
    generated = run_envcheck("rules", "--format", "markdown").stdout
    assert doc == generated, "docs/rules.md is stale: run `envcheck rules --format markdown > docs/rules.md`"


def test_python_option_scans_that_interpreters_environment(preflight_envs: dict[str, Path]) -> None:
    """`envcheck --python PATH` reads the installed distributions (and binaries) of another interpreter."""
    proc = run_envcheck("--python", str(preflight_envs["cu12"]), "--format", "json")
    data = json.loads(proc.stdout)
    (target,) = data["targets"]
    assert target["target"].startswith("python:") and target["inventory"]["context"] == "installed"
    names = {p["name"] for p in target["inventory"]["packages"]}
    assert "torch" in names
    assert any(f["rule"] == "G9-pin-conflict" and f["status"] == "FAIL" for f in target["findings"])
    assert proc.returncode == 1


def test_main_gives_the_gc_threshold_back(tmp_path: Path) -> None:
    """A folder scan allocates many long-lived objects and few cycles: the collector's first threshold is
    raised while envcheck runs (cli.GC_THRESHOLD, BENCHMARKS.md); a caller's own is back afterwards, also
    after an error."""
    import gc

    from envcheck import cli

    before = gc.get_threshold()
    gc.set_threshold(123, 4, 5)
    try:
        assert cli.main(["--fail-on", "never", str(_req(tmp_path, CLEAN))]) == 0
        assert gc.get_threshold() == (123, 4, 5)
        assert cli.main([str(tmp_path / "missing.txt")]) == 2
        assert gc.get_threshold() == (123, 4, 5)
    finally:
        gc.set_threshold(*before)


def test_the_process_ends_with_everything_written(tmp_path: Path) -> None:
    """`python -m envcheck` ends as a process that returns from main() and exits normally (no os._exit: exit
    handlers and finalizers run): what it writes to a pipe is all there, byte for byte, with the same exit code. (Compared with a fresh process: in this one, the check modules other tests imported
    first would register their checks, and order findings, differently.)"""
    import os
    import sys

    normal = "import sys; from envcheck.cli import main; sys.exit(main(sys.argv[1:]))"
    # block-buffered output, as a pipe gets it (PYTHONUNBUFFERED="" is unset for Python)
    changes = {"ENVCHECK_CACHE_DIR": str(tmp_path / "cache"), "PYTHONUNBUFFERED": ""}
    env = {**os.environ, **changes, "PYTHONPATH": str(REPO)}
    for args, code in ((["rules", "--format", "markdown"], 0), (["-f", "json", str(REPO / "examples")], 1),
                       ([str(tmp_path / "missing.txt")], 2), ([str(REPO / "examples/requirements-good.txt")], 0)):
        exited = subprocess.run([sys.executable, "-c", normal, *args], cwd=REPO, capture_output=True, text=True,
                                timeout=120, env=env)
        proc = run_envcheck(*args, env=changes)
        assert (proc.returncode, proc.stdout, proc.stderr) == (code, exited.stdout, exited.stderr)
        assert code != 1 or len(proc.stdout) > 1 << 16  # more than a pipe holds: written while the reader reads


def test_findings_order_does_not_depend_on_the_other_targets(tmp_path: Path) -> None:
    """Check modules load lazily by kind: a folder checked after a requirements file must report its findings
    in the order it does alone (the table's order, not the import order)."""
    site = tmp_path / "site"
    shutil.copytree(REPO / "fixtures" / "binaries", site / "lib")
    info = site / "torch-2.9.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.9.0+cu128\nRequires-Dist: numpy>=9\n")
    (site / "numpy-2.1.0.dist-info").mkdir()
    (site / "numpy-2.1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: numpy\nVersion: 2.1.0\n")
    req = _req(tmp_path, "numpy\n")

    def rules(*targets: str) -> list[str]:
        done = run_envcheck(*targets, "-f", "json", "--no-cache")
        report = json.loads(done.stdout)
        (folder,) = [t for t in report["targets"] if t["target"] == str(site)]
        return [f["rule"] for f in folder["findings"]]

    alone = rules(str(site))
    assert {r.split("-")[0] for r in alone} >= {"G7", "G9"}, alone  # modules loaded for the folder only, and both
    assert rules(str(req), str(site)) == alone


def test_options_of_a_command_may_come_before_or_after_its_word(tmp_path: Path) -> None:
    """argparse, not a hand-kept list, tells an option's value from the command word (issue 26 item 6)."""
    for args in (["--max-expansion", "50", "image"], ["image", "--max-expansion", "50"], ["--no-cache", "image"]):
        proc = run_envcheck(*args)  # no REF: the image command's own usage error, not "neither a file nor a command"
        assert proc.returncode == 2 and "REF" in proc.stderr and "neither a file" not in proc.stderr, (args, proc.stderr)
    for args in (["--format", "json", "rules", "G2"], ["rules", "G2", "--format", "json"], ["--debug", "-f", "json", "rules", "G2"]):
        listed = run_envcheck(*args)
        assert listed.returncode == 0 and json.loads(listed.stdout), args
    # A command word given as an option's value is that value: `--target image` names a stage, not the command.
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text("FROM nvcr.io/nvidia/pytorch:25.09-py3 AS image\nRUN pip install numpy==2.1.0\n")
    proc = run_envcheck("--target", "image", "-f", "json", str(dockerfile))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["targets"][0]["target"] == str(dockerfile)
    # An option of another command before the word is named, not its value taken for a wrong command word.
    for args, option in ((["--kind", "freeze", "image", "x:1"], "--kind"), (["--profile", "dgx-spark", "rules"], "--profile")):
        proc = run_envcheck(*args)
        command = args[2]
        assert proc.returncode == 2 and f"{option} is not an option of `envcheck {command}`" in proc.stderr, proc.stderr
        assert "invalid choice" not in proc.stderr
    # Options after the PATHs and between them.
    clean, bad = _req(tmp_path, CLEAN, "requirements-clean.txt"), _req(tmp_path, CUDA12, "requirements-bad.txt")
    proc = run_envcheck(str(clean), "-f", "json", str(bad), "--fail-on", "never")
    assert proc.returncode == 0 and len(json.loads(proc.stdout)["targets"]) == 2


def test_output_file_replaces_stdout(tmp_path: Path) -> None:
    """`-o FILE` writes the report there and nothing on stdout; one summary line on stderr (issue 26 item 7)."""
    bad = _req(tmp_path, CUDA12)
    for fmt in ("json", "text"):
        out = tmp_path / f"report.{fmt}"
        proc = run_envcheck("-f", fmt, "-o", str(out), str(bad))
        assert proc.returncode == 1 and proc.stdout == "", proc.stdout
        assert "G1 FAIL" in proc.stderr and str(out) in proc.stderr
        assert "G1-cuda12-local-version" in out.read_text()
    quiet = run_envcheck("-f", "json", "-o", str(tmp_path / "q.json"), "-q", str(bad))
    assert (quiet.stdout, quiet.stderr) == ("", "")
    # exit code 2 or 3: the line says why, not only "nothing checked"
    missing = run_envcheck("-f", "json", "-o", str(tmp_path / "m.json"), str(tmp_path / "missing.txt"), str(bad))
    assert missing.returncode == 2 and "; 1 ERROR: " in missing.stderr and "missing.txt: no such file" in missing.stderr


def test_quiet_counts_what_it_hides_by_status(tmp_path: Path) -> None:
    """The "hidden" line names each status it hid: WARNs hidden by -q are not "passing" (issue 26 item 9)."""
    warn = _req(tmp_path, "transformers\naccelerate\n")
    normal = run_envcheck("-f", "json", str(warn))
    statuses = [f["status"] for f in json.loads(normal.stdout)["targets"][0]["findings"]]
    quiet = run_envcheck("-q", str(warn)).stdout
    assert statuses.count("WARN") >= 1
    expected = ", ".join(f"{statuses.count(s)} {s}" for s in ("WARN", "INFO", "SKIP", "PASS") if s in statuses)
    assert f"({expected} hidden;" in quiet, quiet


def test_target_names_a_stage_and_later_stages_are_not_built(tmp_path: Path) -> None:
    """`--target` is a stage name as docker build takes it: an unknown one (or an index) is exit 2 naming the
    stages; the stages after the target are never built and get no findings (issue 26 item 5)."""
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text("FROM nvcr.io/nvidia/pytorch:25.09-py3 AS train\nRUN pip install numpy==2.1.0\n"
                          "FROM nvcr.io/nvidia/pytorch:25.09-py3 AS serve\n"
                          "RUN pip install --extra-index-url https://download.pytorch.org/whl/cu121 torch==2.5.1\n")
    for stage in ("nosuch", "0"):
        proc = run_envcheck("--target", stage, str(dockerfile))
        assert proc.returncode == 2 and "stage names: train, serve" in proc.stdout, proc.stdout
    train = run_envcheck("--target", "train", "-f", "json", str(dockerfile))
    assert train.returncode == 0, train.stdout
    assert not [f for f in json.loads(train.stdout)["targets"][0]["findings"] if f["status"] != "PASS" and f["gotcha"] == "G1"]
    serve = run_envcheck("--target", "serve", "-f", "json", str(dockerfile))
    assert serve.returncode == 1 and "G1-cuda12-index" in serve.stdout


def test_a_mistyped_rule_id_to_ignore_is_named_with_the_closest(tmp_path: Path) -> None:
    """--ignore, [tool.envcheck] ignore and ENVCHECK_IGNORE name an unknown id and the closest real one, exit 2
    (issue 26 item 8); real ids and gotchas still work."""
    bad = _req(tmp_path, CUDA12)
    proc = run_envcheck("--ignore", "G1-cuda12-local-versoin", str(bad))
    assert proc.returncode == 2 and "'G1-cuda12-local-versoin'" in proc.stderr and "'G1-cuda12-local-version'" in proc.stderr
    assert proc.stdout == ""
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text('[tool.envcheck]\nignore = ["G1-cuda12-local-versoin"]\n')
    proc = run_envcheck(str(bad), cwd=tmp_path)
    assert proc.returncode == 2 and "pyproject.toml: ignore:" in proc.stderr and "'G1-cuda12-local-version'" in proc.stderr
    (tmp_path / "pyproject.toml").write_text('[tool.envcheck]\nignore = ["G1-cuda12-local-version", "ARCH"]\n')
    assert run_envcheck(str(bad), cwd=tmp_path).returncode == 0
    assert run_envcheck(str(bad), env={"ENVCHECK_IGNORE": "G11"}).returncode == 2


def test_run_options_layer_from_config_to_the_sources(tmp_path: Path) -> None:
    """One typed options object carries the layered settings down to the sources (issue 27): max-text-size from
    the config file bounds inputs and --max-text-size overrides it; --no-cache leaves the cache untouched."""
    (tmp_path / ".git").mkdir()
    (tmp_path / ".envcheck.toml").write_text('max-text-size = "1KiB"\n')
    big = _req(tmp_path, CLEAN + "# padding\n" * 200)
    refused = run_envcheck("-f", "json", str(big), cwd=tmp_path)
    assert refused.returncode == 2 and "1024" in refused.stdout, refused.stdout
    assert run_envcheck("--max-text-size", "64KiB", str(big), cwd=tmp_path).returncode == 0
    cache = tmp_path / "cache"
    site = tmp_path / "site"
    shutil.copytree(REPO / "fixtures" / "binaries", site / "lib")
    run_envcheck("--no-cache", "--fail-on", "never", str(site), env={"ENVCHECK_CACHE_DIR": str(cache)})
    assert not cache.exists() or not any(p.is_file() for p in cache.rglob("*"))
    run_envcheck("--fail-on", "never", str(site), env={"ENVCHECK_CACHE_DIR": str(cache)})
    assert any(p.is_file() for p in cache.rglob("*"))


def test_a_run_ends_with_a_normal_interpreter_exit(tmp_path: Path) -> None:
    """Exit handlers run at the end of a run (no os._exit: envcheck starts uv and Docker clients, whose
    clean-up must not be skipped), for a clean run, a run with findings and a usage error (issue 27)."""
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(
        "import atexit, os\natexit.register(lambda: open(os.environ['EXIT_MARK'], 'a').write('ran\\n'))\n")
    mark = tmp_path / "mark"
    env = {"PYTHONPATH": f"{REPO}{os.pathsep}{tmp_path / 'site'}", "EXIT_MARK": str(mark)}
    clean, bad = _req(tmp_path, CLEAN, "requirements-clean.txt"), _req(tmp_path, CUDA12, "requirements-bad.txt")
    codes = [run_envcheck(*args, env=env).returncode for args in ([str(clean)], [str(bad)], ["--no-such-flag"])]
    assert codes == [0, 1, 2]
    assert mark.read_text() == "ran\n" * 3


def test_words_after_double_dash_are_paths(tmp_path: Path) -> None:
    """After ``--`` a word is a path even when it looks like an option (the Action passes ``-- PATHS``), and
    paths before and after ``--`` are all checked."""
    (tmp_path / "--fail-on=never").write_text("torch==2.5.1+cu121\n")
    (tmp_path / "good.txt").write_text("torch==2.9.0\n")
    done = run_envcheck("--kind", "requirements", "-f", "json", "good.txt", "--", "--fail-on=never", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert [t["target"] for t in json.loads(done.stdout)["targets"]] == ["good.txt", "--fail-on=never"]
    missing = run_envcheck("--", "--no-such-option", cwd=tmp_path)
    assert missing.returncode == 2 and "--no-such-option: no such file" in missing.stdout


def test_a_mistyped_option_or_rules_selector_is_named_with_the_closest(tmp_path: Path) -> None:
    """An unknown option (`--formt`), of envcheck or of a command, and an unknown `envcheck rules` selector are
    usage errors (exit 2) that name the closest real one, as a mistyped command word and --ignore id are."""
    bad = _req(tmp_path, CUDA12)
    for args, wanted in ((["--formt", "json", str(bad)], "(did you mean --format?)"),
                         (["--verbsoe", str(bad)], "(did you mean --verbose?)"),
                         (["--outptu=report.txt", str(bad)], "(did you mean --output?)"),
                         (["rules", "--formt", "json"], "(did you mean --format?)"),
                         (["image", "--deeep", "x:1"], "(did you mean --deep?)"),
                         (["rules", "G1-cuda12-indx"], "the closest is 'G1-cuda12-index'")):
        proc = run_envcheck(*args, cwd=tmp_path)
        assert proc.returncode == 2 and wanted in proc.stderr and proc.stdout == "", (args, proc.stderr)
    assert "did you mean" not in run_envcheck("--zzzzzz", str(bad)).stderr
    assert run_envcheck("rules", "g1-cuda12-index").returncode == 0


def test_unknown_config_keys_and_severity_ids_are_usage_errors(tmp_path: Path) -> None:
    """A mistyped key of .envcheck.toml or [tool.envcheck] (`fial-on`) used to be ignored without a word, and so
    was a severity for a gotcha or a mistyped rule id: each is now exit 2 naming the closest real one."""
    warn = _req(tmp_path, "transformers\n")
    (tmp_path / ".git").mkdir()
    config = tmp_path / ".envcheck.toml"
    for text, wanted in (('fial-on = "warn"\n', "unknown key 'fial-on'; the closest is 'fail-on'"),
                         ('[tool.envcheck]\nfailon = "warn"\n', "unknown key 'failon'; the closest is 'fail-on'"),
                         ('[severity]\nG9-unpined = "FAIL"\n', "the closest is 'G9-unpinned'"),
                         ('[severity]\nG9 = "FAIL"\n', "'G9' is not a rule id")):
        config.write_text(text)
        proc = run_envcheck(str(warn), cwd=tmp_path)
        assert proc.returncode == 2 and ".envcheck.toml" in proc.stderr and wanted in proc.stderr, (text, proc.stderr)
    config.write_text('fail-on = "warn"\n[severity]\nG9-unpinned = "FAIL"\n')
    assert run_envcheck(str(warn), cwd=tmp_path).returncode == 1
    config.unlink()
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n[tool.envcheck]\nfail-on = "warn"\n[tool.ruff]\nline-length = 100\n')
    assert run_envcheck(str(warn), cwd=tmp_path).returncode == 1


def test_rule_ids_and_gotchas_are_taken_in_any_case_everywhere(tmp_path: Path) -> None:
    """`envcheck rules g1` was accepted while `--ignore g1` was refused: every selector (--ignore,
    ENVCHECK_IGNORE, config `ignore`, `severity` keys, pragmas) takes a rule id, gotcha or `policy` in any case
    and acts as its canonical spelling; a mistyped one is still an error naming the closest, as envcheck spells it."""
    bad = _req(tmp_path, CUDA12 + "transformers\n")
    (tmp_path / ".git").mkdir()

    def verdict(*args: str, env: dict[str, str] | None = None) -> tuple[int, list[tuple[str, str]], list[str]]:
        proc = run_envcheck("-f", "json", *args, str(bad), cwd=tmp_path, env=env)
        assert proc.returncode in (0, 1), proc.stderr
        (target,) = json.loads(proc.stdout)["targets"]
        return (proc.returncode, sorted((f["rule"], f["status"]) for f in target["findings"] if f["status"] != "PASS"),
                sorted(f["rule"] for f in target.get("suppressed", [])))

    assert verdict() == (1, [("G1-cuda12-local-version", "FAIL"), ("G9-unpinned", "WARN")], [])
    for args, env in ((["--ignore", "g1"], None), (["--ignore", "g1-CUDA12-local-version"], None),
                      ([], {"ENVCHECK_IGNORE": "g1, g9-unpinned"})):
        code, left, hidden = verdict(*args, env=env)
        assert code == 0 and "G1-cuda12-local-version" in hidden and ("G1-cuda12-local-version", "FAIL") not in left, (args, env)
    assert verdict("--ignore", "POLICY")[1:] == ([("G1-cuda12-local-version", "FAIL")], ["G9-unpinned"])
    config = tmp_path / ".envcheck.toml"
    config.write_text('ignore = [{ rule = "g9-UNPINNED", reason = "constraints.txt pins" }]\n'
                      '[severity]\n"g1-cuda12-LOCAL-version" = "warn"\n')
    assert verdict() == (0, [("G1-cuda12-local-version", "WARN")], ["G9-unpinned"])
    config.unlink()
    bad.write_text("# envcheck: ignore=g1-CUDA12-local-version pinned for the x86 CI box\n" + bad.read_text())
    assert verdict() == (0, [("G9-unpinned", "WARN")], ["G1-cuda12-local-version"])
    for args, env, wanted in ((["--ignore", "g1-cuda12-locl-version"], None, "--ignore: unknown rule or gotcha "
                               "'g1-cuda12-locl-version'; the closest is 'G1-cuda12-local-version'"),
                              ([], {"ENVCHECK_IGNORE": "POLICYY"}, "the closest is 'policy'")):
        proc = run_envcheck(*args, str(bad), cwd=tmp_path, env=env)
        assert proc.returncode == 2 and wanted in proc.stderr, (args, proc.stderr)


def test_a_registry_name_that_does_not_resolve_is_said_plainly(tmp_path: Path) -> None:
    """A registry host with no DNS name (.invalid never resolves, RFC 2606) is exit 3 with a sentence about the
    name, not urllib3's repr of its connection pool (`_WatchedHTTPSPool(host=..., port=443): Max retries ...`)."""
    proc = run_envcheck("image", "--http-timeout", "20", "-f", "json", "registry.envcheck.invalid/lab/x:1", cwd=tmp_path)
    assert proc.returncode == 3, proc.stderr
    [finding] = json.loads(proc.stdout)["targets"][0]["findings"]
    assert "could not be resolved" in finding["message"], finding["message"]
    assert "Pool(" not in finding["message"] and "Max retries" not in finding["message"]
