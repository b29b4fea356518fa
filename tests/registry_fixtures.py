"""A real OCI registry on loopback (Debian's ``docker-registry``), test images pushed to it, and faults.

Started once per test process (the first fixture that needs it) and stopped at exit: a plain registry,
one with htpasswd Basic auth and one with token auth (a token server in this process signs RS256 JWTs
the way Docker Hub's does). Images are built here from bytes with ``requests`` (no Docker engine):
OCI and Docker media types, indexes with and without arm64, gzip/zstd/plain layers, whiteouts, real
METADATA files and real ELF files built with gcc against stub CUDA 12 and 13 runtimes.
:class:`FaultProxy` sits in front of a registry and injects the failures users meet (429, 5xx, cut
streams, corrupted blobs, non-JSON manifests, nvcr.io-style challenges). Loopback only.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import datetime
import functools
import gzip
import hashlib
import io
import json
import os
import re
import selectors
import shutil
import socket
import socketserver
import ssl
import struct
import subprocess
import tarfile
import tempfile
import threading
import time
import warnings
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
import requests
from conftest import require

OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_CONFIG = "application/vnd.docker.container.image.v1+json"
LAYER_TYPES = {
    ("oci", "gzip"): "application/vnd.oci.image.layer.v1.tar+gzip",
    ("oci", "zstd"): "application/vnd.oci.image.layer.v1.tar+zstd",
    ("oci", "none"): "application/vnd.oci.image.layer.v1.tar",
    ("docker", "gzip"): "application/vnd.docker.image.rootfs.diff.tar.gzip",
}
USER, PASSWORD = "alice", "s3cret"
REFRESH_TOKEN = "alice-refresh-token"  # a test secret: the identity token the token server accepts
WORK = Path(tempfile.gettempdir()) / f"envcheck-registry-{os.getpid()}"
_STARTED: list[subprocess.Popen[bytes]] = []
_SERVERS: list[socketserver.TCPServer] = []


def digest_of(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def free_port() -> int:
    """A loopback port free now, for a server about to bind it (for an address where nothing must answer,
    use :func:`refusing_port`: a port let go can be taken by another server of the suite before it is dialled)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def refusing_port() -> Iterator[int]:
    """A loopback port where nothing listens while the block runs: bound and never listening, so a connection
    is refused and no other server can take the port meanwhile."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


def _stop_all() -> None:
    for server in _SERVERS:
        server.shutdown()
    for proc in _STARTED:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
    shutil.rmtree(WORK, ignore_errors=True)


atexit.register(_stop_all)


def registry_binary() -> str | None:
    """``docker-registry`` on PATH; installed with apt when missing and we are root (as .ci/setup does)."""
    found = shutil.which("docker-registry")
    if found is None and os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        install = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "docker-registry"]
        if subprocess.run(install, env=env, capture_output=True, check=False).returncode != 0:
            subprocess.run(["apt-get", "update", "-qq"], env=env, capture_output=True, check=False)
            subprocess.run(install, env=env, capture_output=True, check=False)
        found = shutil.which("docker-registry")
    return found


def _start_registry(name: str, auth_yaml: str = "", storage_dir: Path | None = None, tls: tuple[Path, Path] | None = None) -> str:
    """Start a registry on a free loopback port (in-memory storage unless ``storage_dir``); its ``host:port``."""
    binary = registry_binary()
    require(binary is not None, "docker-registry is not installed (apt-get install docker-registry)")
    assert binary is not None
    WORK.mkdir(parents=True, exist_ok=True)
    port = free_port()
    config = WORK / f"{name}.yml"
    config.write_text(
        "version: 0.1\nlog: {level: error, accesslog: {disabled: true}}\n"
        + (f"storage: {{filesystem: {{rootdirectory: {storage_dir}}}, delete: {{enabled: true}}}}\n" if storage_dir else
           "storage: {inmemory: {}, delete: {enabled: true}}\n")
        + f'http: {{addr: "127.0.0.1:{port}", secret: test-only'
        + (f", tls: {{certificate: {tls[0]}, key: {tls[1]}}}" if tls else "") + "}\n" + auth_yaml
    )
    log = (WORK / f"{name}.log").open("wb")
    proc = subprocess.Popen([binary, "serve", str(config)], stdout=log, stderr=subprocess.STDOUT)
    _STARTED.append(proc)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            requests.get(f"http://127.0.0.1:{port}/v2/", timeout=1)
            return f"127.0.0.1:{port}"
        except requests.ConnectionError:
            if proc.poll() is not None:
                break
            time.sleep(0.05)
    raise RuntimeError(f"docker-registry did not start: {(WORK / f'{name}.log').read_text()[-2000:]}")


# ---- token server ---------------------------------------------------------------------------------

class TokenServer:
    """Docker's token protocol: Basic-authenticated GET /token -> RS256 JWT with the asked access.

    Anonymous requests get pull access to ``public/*`` repositories only (as public images on
    nvcr.io and Docker Hub do); a missing ``service`` parameter (nvcr.io's challenge has none) is
    answered for the one service this server signs for.
    """

    service = "test-registry"
    issuer = "test-issuer"

    def __init__(self, label: str = "token", tls: ssl.SSLContext | None = None, tls_host: str = "") -> None:
        """``tls``: serve HTTPS with this context; the realm then names ``tls_host`` (reached through a
        :class:`ConnectProxy`) instead of the loopback address."""
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import padding, rsa
        from cryptography.x509.oid import NameOID

        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, self.issuer)])
        now = datetime.datetime.now(datetime.timezone.utc)
        cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
                .not_valid_after(now + datetime.timedelta(days=2)).sign(key, hashes.SHA256()))
        WORK.mkdir(parents=True, exist_ok=True)
        self.cert_path = WORK / f"{label}-cert.pem"
        self.cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        x5c = base64.b64encode(cert.public_bytes(serialization.Encoding.DER)).decode()
        self.requests: list[dict[str, list[str]]] = []
        server_self = self

        def b64(data: bytes) -> str:
            return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                """OAuth2 refresh-token grant (what `docker login` stores as an identity token)."""
                length = int(self.headers.get("Content-Length") or 0)
                form = parse_qs(self.rfile.read(length).decode())
                server_self.requests.append({**form, "method": ["POST"]})
                if form.get("grant_type") != ["refresh_token"] or form.get("refresh_token") != [REFRESH_TOKEN]:
                    self.send_response(401)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.issue(form, USER)

            def do_GET(self) -> None:
                query = parse_qs(urlparse(self.path).query)
                server_self.requests.append(query)
                header = self.headers.get("Authorization", "")
                user = None
                if header:
                    if header != "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode():
                        self.send_response(401)
                        self.end_headers()
                        return
                    user = USER
                self.issue(query, user)

            def issue(self, query: dict[str, list[str]], user: str | None) -> None:
                access = []
                for scope in query.get("scope", []):
                    kind, _, rest = scope.partition(":")
                    repo, _, actions = rest.rpartition(":")
                    allowed = actions.split(",") if user else (["pull"] if repo.startswith("public/") else [])
                    access.append({"type": kind, "name": repo, "actions": [a for a in actions.split(",") if a in allowed]})
                now = int(time.time())
                claims = {"iss": server_self.issuer, "sub": user or "", "aud": (query.get("service") or [server_self.service])[0],
                          "iat": now, "nbf": now - 5, "exp": now + 300, "jti": f"{now}-{len(server_self.requests)}", "access": access}
                message = b64(json.dumps({"typ": "JWT", "alg": "RS256", "x5c": [x5c]}).encode()) + "." + b64(json.dumps(claims).encode())
                token = message + "." + b64(key.sign(message.encode(), padding.PKCS1v15(), hashes.SHA256()))
                body = json.dumps({"token": token, "access_token": token, "expires_in": 300}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = int(self.server.server_address[1])
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        _SERVERS.append(self.server)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.realm = f"https://{tls_host}/token" if tls is not None else f"http://127.0.0.1:{self.port}/token"


# ---- pushing images --------------------------------------------------------------------------------

class Pusher:
    """Pushes blobs and manifests with requests, authenticating like a client would (for setup only)."""

    def __init__(self, host: str, auth: Callable[[str], dict[str, str]] | None = None, scheme: str = "http",
                 verify: bool | str = True) -> None:
        self.base = f"{scheme}://{host}"
        self.auth = auth or (lambda repo: {})
        self.verify = verify

    def blob(self, repo: str, data: bytes) -> dict[str, Any]:
        headers = self.auth(repo)
        post = requests.post(f"{self.base}/v2/{repo}/blobs/uploads/", headers=headers, timeout=30, verify=self.verify)
        post.raise_for_status()
        location = post.headers["Location"]
        url = location if location.startswith("http") else self.base + location
        put = requests.put(url, params={"digest": digest_of(data)}, data=data, headers=headers, timeout=60, verify=self.verify)
        put.raise_for_status()
        return {"size": len(data), "digest": digest_of(data)}

    def manifest(self, repo: str, ref: str, body: dict[str, Any]) -> dict[str, Any]:
        raw = json.dumps(body).encode()
        headers = {**self.auth(repo), "Content-Type": body["mediaType"]}
        requests.put(f"{self.base}/v2/{repo}/manifests/{ref}", data=raw, headers=headers, timeout=30,
                     verify=self.verify).raise_for_status()
        return {"mediaType": body["mediaType"], "size": len(raw), "digest": digest_of(raw)}


@dataclass
class Layer:
    """A layer's uncompressed tar and how to compress it."""

    tar: bytes
    compression: str = "gzip"  # gzip | zstd | none

    def blob(self) -> bytes:
        if self.compression == "gzip":
            return gzip.compress(self.tar, mtime=0)
        if self.compression == "zstd":
            import zstandard

            return zstandard.ZstdCompressor().compress(self.tar)
        return self.tar


def tar_of(files: dict[str, bytes | None], modes: dict[str, int] | None = None) -> bytes:
    """A tar with ``files`` (None: a directory); names as given (``.wh.`` names make whiteouts)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.mtime = 0
            if data is None:
                info.type = tarfile.DIRTYPE
                info.mode = 0o755
                tf.addfile(info)
                continue
            info.size = len(data)
            info.mode = (modes or {}).get(name, 0o644)
            tf.addfile(info, io.BytesIO(data))
    return out.getvalue()


def push_image(pusher: Pusher, repo: str, ref: str, config: dict[str, Any], layers: list[Layer],
               flavour: str = "oci") -> dict[str, Any]:
    """Push config, layers and a manifest (OCI or Docker media types); the manifest's descriptor."""
    config = {**config, "rootfs": {"type": "layers", "diff_ids": [digest_of(layer.tar) for layer in layers]}}
    config_desc = pusher.blob(repo, json.dumps(config).encode())
    layer_descs = []
    for layer in layers:
        media = LAYER_TYPES[(flavour, layer.compression)]
        layer_descs.append({"mediaType": media, **pusher.blob(repo, layer.blob())})
    body = {"schemaVersion": 2, "mediaType": OCI_MANIFEST if flavour == "oci" else DOCKER_MANIFEST,
            "config": {"mediaType": OCI_CONFIG if flavour == "oci" else DOCKER_CONFIG, **config_desc}, "layers": layer_descs}
    return pusher.manifest(repo, ref, body)


def push_index(pusher: Pusher, repo: str, ref: str, children: list[tuple[dict[str, str], dict[str, Any]]],
               flavour: str = "oci") -> dict[str, Any]:
    body = {"schemaVersion": 2, "mediaType": OCI_INDEX if flavour == "oci" else DOCKER_LIST,
            "manifests": [{**desc, "platform": platform} for platform, desc in children]}
    return pusher.manifest(repo, ref, body)


# ---- image contents ---------------------------------------------------------------------------------

DIST = "usr/local/lib/python3.12/dist-packages"

# NGC PyTorch 25.10 (arm64) config, modelled on spark-facts.md §1.4 (values from the reconstructed image).
NGC_25_10_ENV = [
    "PATH=/usr/local/nvm/versions/node/v22.20.0/bin:/usr/local/lib/python3.12/dist-packages/torch_tensorrt/bin:/usr/local/mpi/bin:/usr/local/nvidia/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "CUDA_VERSION=13.0.2.006", "CUDA_DRIVER_VERSION=580.95.05", "NVIDIA_REQUIRE_CUDA=cuda>=9.0",
    "NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_DRIVER_CAPABILITIES=compute,utility,video", "NVIDIA_PRODUCT_NAME=PyTorch",
    "CUDNN_VERSION=9.14.0.64", "NCCL_VERSION=2.27.7", "CUBLAS_VERSION=13.1.0.3",
    "CUDA_ARCH_LIST=8.0 8.6 9.0 10.0 11.0 12.0", "MAXSMVER=121", "TRANSFORMER_ENGINE_VERSION=2.8",
    "PYTORCH_BUILD_VERSION=2.9.0a0+145a3a7", "PYTORCH_VERSION=2.9.0a0+145a3a7", "PYTORCH_BUILD_NUMBER=0",
    "NVIDIA_PYTORCH_VERSION=25.10", "PIP_BREAK_SYSTEM_PACKAGES=1", "PIP_CONSTRAINT=/etc/pip/constraint.txt",
    "TORCH_CUDA_ARCH_LIST=8.0 8.6 9.0 10.0 11.0 12.0+PTX", "CUDA_HOME=/usr/local/cuda",
    "TRITON_PTXAS_PATH=/usr/local/cuda/bin/ptxas", "NVIDIA_BUILD_ID=222161059",
]
NGC_LABELS = {
    "org.opencontainers.image.ref.name": "ubuntu", "org.opencontainers.image.version": "24.04",
    "com.nvidia.volumes.needed": "nvidia_driver", "com.nvidia.cuda.version": "9.0",
    "com.nvidia.pytorch.version": "2.9.0a0+145a3a7", "com.nvidia.build.id": "222161059",
}
NGC_HISTORY = [
    {"created_by": "/bin/sh -c #(nop) ADD file:0123 in / "},
    {"created_by": "ENV CUDA_VERSION=13.0.2.006", "empty_layer": True},
    {"created_by": "RUN |1 TARGETARCH=arm64 /bin/sh -c pip install --no-cache-dir /opt/transfer/flash_attn*.whl # buildkit"},
    {"created_by": "ENV NVIDIA_PYTORCH_VERSION=25.10", "empty_layer": True},
]
# A CUDA 12 NGC release (24.10 era) as users still pull it.
NGC_24_10_ENV = ["CUDA_VERSION=12.6.2.004", "NVIDIA_PYTORCH_VERSION=24.10", "PYTORCH_VERSION=2.5.0a0+e000cf0",
                 "TORCH_CUDA_ARCH_LIST=5.2 6.0 6.1 7.0 7.2 7.5 8.0 8.6 8.7 9.0+PTX"]


def config_for(arch: str, env: list[str] | None = None, labels: dict[str, str] | None = None,
               history: list[dict[str, Any]] | None = None, variant: str | None = None) -> dict[str, Any]:
    config: dict[str, Any] = {"architecture": arch, "os": "linux", "created": "2025-10-20T00:00:00Z",
                              "config": {"Env": env or ["PATH=/usr/bin"], "Labels": labels or {}},
                              "history": history or [{"created_by": "/bin/sh -c #(nop) ADD file:0 in / "}]}
    if variant:
        config["variant"] = variant
    return config


def metadata(name: str, version: str, requires: list[str] = ()) -> bytes:  # type: ignore[assignment]
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}", *[f"Requires-Dist: {r}" for r in requires]]
    return ("\n".join(lines) + "\n\nlong description\n").encode()


@dataclass
class ElfFiles:
    """ELF shared objects built with gcc: stub CUDA runtimes and extensions linked against them."""

    cudart12: bytes
    cudart13: bytes
    ext12: bytes  # NEEDED libcudart.so.12
    ext13: bytes  # NEEDED libcudart.so.13


def build_elves(folder: Path) -> ElfFiles:
    require(shutil.which("gcc") is not None, "gcc is needed to build test ELF files")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "stub.c").write_text("int cudaGetDeviceCount(int *n) { *n = 1; return 0; }\n")
    (folder / "ext.c").write_text("int cudaGetDeviceCount(int *n);\nint ext_devices(void) { int n = 0; cudaGetDeviceCount(&n); return n; }\n")
    for major in (12, 13):
        subprocess.run(["gcc", "-shared", "-fPIC", "-o", f"libcudart.so.{major}", f"-Wl,-soname,libcudart.so.{major}", "stub.c"],
                       cwd=folder, check=True)
        subprocess.run(["gcc", "-shared", "-fPIC", "-o", f"libext{major}.so", "ext.c", "-L.", f"-l:libcudart.so.{major}"],
                       cwd=folder, check=True)
    read = lambda name: (folder / name).read_bytes()  # noqa: E731
    return ElfFiles(read("libcudart.so.12"), read("libcudart.so.13"), read("libext12.so"), read("libext13.so"))


@dataclass
class Images:
    """References (``host/repo:tag``) of the session's test images on the plain registry."""

    host: str
    ngc_arm64: str  # OCI index amd64+arm64, NGC 25.10-like configs
    amd64_only: str  # OCI index without arm64 (amd64, ppc64le)
    docker_list: str  # Docker manifest list amd64 + arm64/v8, Docker media types
    single_arm64: str  # plain OCI manifest, arm64
    single_amd64: str  # plain Docker v2 manifest, amd64 config
    ngc_cuda12: str  # arm64 image whose config says CUDA 12.6
    deep_clean: str  # amd64 (x86-64 ELF): CUDA 12 extension deleted by a whiteout; CUDA 13 left
    deep_cuda12: str  # amd64: a CUDA 12 extension in the final filesystem
    bare_pip_latest: str  # arm64 `:latest` whose history pip-installs torch on a plain Python base
    digests: dict[str, str] = field(default_factory=dict)


def _deep_layers(elves: ElfFiles, keep_cuda12: bool) -> list[Layer]:
    base = Layer(tar_of({
        f"{DIST}/torch-2.9.0a0+145a3a7.nv25.10.dist-info/METADATA": metadata("torch", "2.9.0a0+145a3a7.nv25.10", ["filelock", "triton==3.4.0; platform_system == 'Linux'"]),
        f"{DIST}/torch/lib/libtorch_ext.so": elves.ext13,
        "usr/local/cuda-13.0/targets/x86_64-linux/lib/libcudart.so.13": elves.cudart13,
        f"{DIST}/oldcu12-1.0.dist-info/METADATA": metadata("oldcu12", "1.0"),
        f"{DIST}/oldcu12/_C.so": elves.ext12,
        f"{DIST}/legacy/": None,
        f"{DIST}/legacy/_legacy.so": elves.ext12,
        f"{DIST}/Flash_Attn-2.7.4.post1.dist-info/METADATA": metadata("Flash_Attn", "2.7.4.post1", ["torch", "einops"]),
        "etc/motd": b"hello\n",
    }), "gzip")
    if keep_cuda12:
        upper = Layer(tar_of({f"{DIST}/unsloth-2025.10.1.dist-info/METADATA": metadata("unsloth", "2025.10.1"),
                              f"{DIST}/oldstyle-0.9-py3.12.egg-info/PKG-INFO": metadata("OldStyle", "0.9")}), "zstd")
        return [base, upper]
    # zstd layer: whiteouts remove the CUDA 12 package (dist-info and module folder).
    removal = Layer(tar_of({
        f"{DIST}/.wh.oldcu12-1.0.dist-info": b"",
        f"{DIST}/.wh.oldcu12": b"",
    }), "zstd")
    # uncompressed layer: an opaque directory hides everything the lower layers had in legacy/.
    opaque = Layer(tar_of({
        f"{DIST}/legacy/": None,
        f"{DIST}/legacy/.wh..wh..opq": b"",
        f"{DIST}/legacy/__init__.py": b"",
        f"{DIST}/numpy-2.1.0.dist-info/METADATA": metadata("numpy", "2.1.0"),
    }), "none")
    return [base, removal, opaque]


_IMAGES: dict[str, Any] = {}
_LOCK = threading.Lock()


def session_registry() -> str:
    """``host:port`` of the plain registry (started once per process)."""
    with _LOCK:
        if "plain" not in _IMAGES:
            _IMAGES["plain"] = _start_registry("plain")
        return str(_IMAGES["plain"])


def session_images() -> Images:
    """Push the test images once per process."""
    host = session_registry()
    with _LOCK:
        if "images" in _IMAGES:
            return _IMAGES["images"]  # type: ignore[no-any-return]
        pusher = Pusher(host)
        elves = build_elves(WORK / "elf")
        small = Layer(tar_of({"etc/os-release": b"ID=ubuntu\nVERSION_ID=24.04\n"}))
        images = Images(host=host, ngc_arm64=f"{host}/nvidia/pytorch:25.10-py3", amd64_only=f"{host}/lab/amd64only:1.0",
                        docker_list=f"{host}/lab/dockerlist:1.0", single_arm64=f"{host}/lab/single:arm64",
                        single_amd64=f"{host}/lab/single:amd64", ngc_cuda12=f"{host}/nvidia/pytorch:24.10-py3",
                        deep_clean=f"{host}/lab/deep:clean", deep_cuda12=f"{host}/lab/deep:cuda12",
                        bare_pip_latest=f"{host}/lab/barepip:latest")
        arm = push_image(pusher, "nvidia/pytorch", "25.10-py3-arm64", config_for("arm64", NGC_25_10_ENV, NGC_LABELS, NGC_HISTORY), [small])
        amd = push_image(pusher, "nvidia/pytorch", "25.10-py3-amd64", config_for("amd64", NGC_25_10_ENV, NGC_LABELS, NGC_HISTORY), [small])
        top = push_index(pusher, "nvidia/pytorch", "25.10-py3", [({"architecture": "amd64", "os": "linux"}, amd),
                                                                 ({"architecture": "arm64", "os": "linux"}, arm)])
        images.digests["ngc_arm64"] = top["digest"]
        images.digests["ngc_arm64_child"] = arm["digest"]
        a = push_image(pusher, "lab/amd64only", "amd64", config_for("amd64"), [small])
        p = push_image(pusher, "lab/amd64only", "ppc64le", config_for("ppc64le"), [small])
        push_index(pusher, "lab/amd64only", "1.0", [({"architecture": "amd64", "os": "linux"}, a), ({"architecture": "ppc64le", "os": "linux"}, p)])
        da = push_image(pusher, "lab/dockerlist", "amd64", config_for("amd64"), [Layer(small.tar, "gzip")], flavour="docker")
        dr = push_image(pusher, "lab/dockerlist", "arm64", config_for("arm64", variant="v8"), [Layer(small.tar, "gzip")], flavour="docker")
        push_index(pusher, "lab/dockerlist", "1.0", [({"architecture": "amd64", "os": "linux"}, da),
                                                      ({"architecture": "arm64", "os": "linux", "variant": "v8"}, dr)], flavour="docker")
        push_image(pusher, "lab/single", "arm64", config_for("arm64", ["CUDA_VERSION=13.0.2"]), [small])
        push_image(pusher, "lab/single", "amd64", config_for("amd64", ["CUDA_VERSION=13.0.2"]), [Layer(small.tar, "gzip")], flavour="docker")
        push_image(pusher, "nvidia/pytorch", "24.10-py3", config_for("arm64", NGC_24_10_ENV), [small])
        clean = push_image(pusher, "lab/deep", "clean", config_for("amd64", ["CUDA_VERSION=13.0.2"]), _deep_layers(elves, keep_cuda12=False))
        images.digests["deep_clean"] = clean["digest"]
        push_image(pusher, "lab/deep", "cuda12", config_for("amd64", ["CUDA_VERSION=13.0.2"]), _deep_layers(elves, keep_cuda12=True))
        bare = push_image(pusher, "lab/barepip", "latest", config_for("arm64", ["PATH=/usr/local/bin:/usr/bin", "PYTHON_VERSION=3.12.7"], history=[
            {"created_by": "/bin/sh -c #(nop) ADD file:1 in / "},
            {"created_by": "ENV PYTHON_VERSION=3.12.7", "empty_layer": True},
            {"created_by": "RUN /bin/sh -c pip install --no-cache-dir torch==2.9.0 xformers==0.0.33.post1 transformers # buildkit"},
        ]), [small])
        images.digests["bare_pip_latest"] = bare["digest"]
        _IMAGES["images"] = images
        _IMAGES["elves"] = elves
        return images


def session_elves() -> ElfFiles:
    session_images()
    return _IMAGES["elves"]  # type: ignore[no-any-return]


@dataclass
class AuthRegistry:
    host: str
    image: str  # a pushed image reference (arm64 single manifest)
    token: TokenServer | None = None
    public_image: str = ""  # token registry only: anonymous pull allowed


def _bcrypt_line() -> str:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            import crypt
        return f"{USER}:" + crypt.crypt(PASSWORD, crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16))
    except ImportError:  # Python 3.13+: the bcrypt package
        import bcrypt

        return f"{USER}:" + bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=4)).decode()


def session_basic_registry() -> AuthRegistry:
    """A registry with htpasswd Basic auth (alice:s3cret, bcrypt cost 4) holding one image."""
    with _LOCK:
        if "basic" in _IMAGES:
            return _IMAGES["basic"]  # type: ignore[no-any-return]
    WORK.mkdir(parents=True, exist_ok=True)
    htpasswd = WORK / "htpasswd"
    htpasswd.write_text(_bcrypt_line() + "\n")
    host = _start_registry("basic", f"auth: {{htpasswd: {{realm: test-realm, path: {htpasswd}}}}}\n")
    creds = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    pusher = Pusher(host, lambda repo: {"Authorization": creds})
    push_image(pusher, "private/app", "1.0", config_for("arm64", ["CUDA_VERSION=13.0.2"]), [Layer(tar_of({"etc/x": b"x"}))])
    found = AuthRegistry(host=host, image=f"{host}/private/app:1.0")
    with _LOCK:
        _IMAGES["basic"] = found
    return found


def session_token_registry() -> AuthRegistry:
    """A registry with token auth; ``private/app`` needs alice's login, ``public/app`` is anonymous."""
    with _LOCK:
        if "token" in _IMAGES:
            return _IMAGES["token"]  # type: ignore[no-any-return]
    try:
        token = TokenServer()
    except ImportError:
        require(False, "the cryptography package is needed for the token server")
        raise
    host = _start_registry("token", (
        f'auth: {{token: {{realm: "{token.realm}", service: {token.service}, issuer: {token.issuer}, '
        f"rootcertbundle: {token.cert_path}}}}}\n"))

    def auth(repo: str) -> dict[str, str]:
        got = requests.get(token.realm, params={"service": token.service, "scope": f"repository:{repo}:pull,push"},
                           auth=(USER, PASSWORD), timeout=10)
        got.raise_for_status()
        return {"Authorization": f"Bearer {got.json()['token']}"}

    pusher = Pusher(host, auth)
    for repo in ("private/app", "public/app"):
        push_image(pusher, repo, "1.0", config_for("arm64", ["CUDA_VERSION=13.0.2"]), [Layer(tar_of({"etc/x": b"x"}))])
    found = AuthRegistry(host=host, image=f"{host}/private/app:1.0", token=token, public_image=f"{host}/public/app:1.0")
    with _LOCK:
        _IMAGES["token"] = found
    return found


# ---- TLS: registries under real host names, behind a loopback CONNECT proxy ---------------------------------

TLS_DOMAIN = "envcheck.test"  # a reserved name (RFC 2606): never resolved; the proxy maps it to loopback ports


class ConnectProxy:
    """An HTTPS proxy on loopback (``HTTPS_PROXY``): ``CONNECT host:port`` is tunnelled to the loopback port
    ``routes[host]``; anything else (a plain-HTTP request through ``HTTP_PROXY``) is answered 502.
    ``seen`` holds every request line, so a test can prove a request was never made."""

    def __init__(self) -> None:
        self.routes: dict[str, int] = {}
        self.seen: list[str] = []
        proxy = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                head = b""
                while b"\r\n\r\n" not in head:
                    chunk = self.request.recv(4096)
                    if not chunk or len(head) > 65536:
                        return
                    head += chunk
                line = head.split(b"\r\n", 1)[0].decode("latin-1")
                proxy.seen.append(line)
                method, target = [*line.split(" "), "", ""][:2]
                port = proxy.routes.get(target.rpartition(":")[0]) if method == "CONNECT" else None
                if port is None:
                    self.request.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                    return
                with socket.create_connection(("127.0.0.1", port), timeout=30) as upstream:
                    self.request.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    _pipe(self.request, upstream)

        self.server = _QuietTCPServer(("127.0.0.1", 0), Handler)
        _SERVERS.append(self.server)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


class _QuietTCPServer(socketserver.ThreadingTCPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass


def _pipe(one: socket.socket, other: socket.socket) -> None:
    """Copy bytes both ways until either side closes."""
    with selectors.DefaultSelector() as selector:
        selector.register(one, selectors.EVENT_READ, other)
        selector.register(other, selectors.EVENT_READ, one)
        while True:
            for key, _ in selector.select(timeout=60):
                data = key.fileobj.recv(65536)  # type: ignore[union-attr]
                if not data:
                    return
                key.data.sendall(data)


@dataclass
class TlsRegistries:
    """Real registries serving HTTPS under ``*.envcheck.test`` names, their token server, and how to reach them.

    ``image``: a private image on ``registry.envcheck.test`` (token realm ``https://auth.envcheck.test``);
    ``downgrade``: a registry whose challenge names a plain-HTTP realm on another host;
    ``loopback_realm``: a registry whose challenge names a plain-HTTP realm on loopback (the session's
    plain token server). ``env()`` is what a client needs: the proxy and the test CA.
    """

    image: str
    downgrade: str
    loopback_realm: str
    ca_path: Path
    proxy: ConnectProxy
    token: TokenServer

    def env(self) -> dict[str, str]:
        return {"HTTPS_PROXY": self.proxy.url, "https_proxy": self.proxy.url, "HTTP_PROXY": self.proxy.url,
                "http_proxy": self.proxy.url, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
                "REQUESTS_CA_BUNDLE": str(self.ca_path)}


def _test_ca(names: list[str]) -> tuple[Path, Path, Path]:
    """A throwaway CA and a server certificate for ``names`` (and 127.0.0.1): (ca.pem, cert.pem, key.pem)."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    valid = (now - datetime.timedelta(days=1), now + datetime.timedelta(days=2))
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "envcheck test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(valid[0]).not_valid_after(valid[1])
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                                       key_encipherment=False, data_encipherment=False, key_agreement=False,
                                       encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in names]
    sans.append(x509.IPAddress(ipaddress.ip_address("127.0.0.1")))
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(valid[0]).not_valid_after(valid[1])
            .add_extension(x509.SubjectAlternativeName(sans), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    WORK.mkdir(parents=True, exist_ok=True)
    paths = (WORK / "tls-ca.pem", WORK / "tls-cert.pem", WORK / "tls-key.pem")
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return paths


def session_tls_registries() -> TlsRegistries:
    """Start (once) three HTTPS registries with token auth, an HTTPS token server and the CONNECT proxy."""
    with _LOCK:
        if "tls" in _IMAGES:
            return _IMAGES["tls"]  # type: ignore[no-any-return]
    names = {part: f"{part}.{TLS_DOMAIN}" for part in ("registry", "auth", "downgrade", "loopback-realm")}
    try:
        ca_path, cert_path, key_path = _test_ca(list(names.values()))
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert_path, key_path)
        token = TokenServer("tls-token", tls=context, tls_host=names["auth"])
    except ImportError:
        require(False, "the cryptography package is needed for the TLS registries")
        raise
    plain_token = session_token_registry().token
    assert plain_token is not None

    def start(name: str, realm: str, issuer: TokenServer) -> str:
        host = _start_registry(name, (f'auth: {{token: {{realm: "{realm}", service: {issuer.service}, '
                                      f"issuer: {issuer.issuer}, rootcertbundle: {issuer.cert_path}}}}}\n"),
                               tls=(cert_path, key_path))
        proxy.routes[names[name]] = int(host.rsplit(":", 1)[1])
        return host

    proxy = ConnectProxy()
    proxy.routes[names["auth"]] = token.port
    host = start("registry", token.realm, token)
    start("downgrade", f"http://{names['auth']}/token", token)
    loopback = start("loopback-realm", plain_token.realm, plain_token)

    def auth(url: str, service: str) -> Callable[[str], dict[str, str]]:
        def header(repo: str) -> dict[str, str]:
            got = requests.get(url, params={"service": service, "scope": f"repository:{repo}:pull,push"},
                               auth=(USER, PASSWORD), timeout=10, verify=str(ca_path))
            got.raise_for_status()
            return {"Authorization": f"Bearer {got.json()['token']}"}
        return header

    for where, url in ((host, f"https://127.0.0.1:{token.port}/token"), (loopback, plain_token.realm)):
        pusher = Pusher(where, auth(url, token.service), scheme="https", verify=str(ca_path))
        push_image(pusher, "private/app", "1.0", config_for("arm64", ["CUDA_VERSION=13.0.2"]), [Layer(tar_of({"etc/x": b"x"}))])
    found = TlsRegistries(image=f"{names['registry']}/private/app:1.0", downgrade=f"{names['downgrade']}/private/app:1.0",
                          loopback_realm=f"{names['loopback-realm']}/private/app:1.0", ca_path=ca_path, proxy=proxy,
                          token=token)
    with _LOCK:
        _IMAGES["tls"] = found
    return found


# ---- fault injection ---------------------------------------------------------------------------------

@dataclass
class Fault:
    """Inject ``action`` on requests whose method and path match, ``times`` times (-1: always)."""

    pattern: str  # regex on the request path
    # status | corrupt | cut | not-json | nvcr-challenge | accept-docker-only | reset | reset-before-answer |
    # slow-body | slow-headers | rewrite | redirect | raw (see FaultProxy.handle)
    action: str
    times: int = 1
    status: int = 500
    headers: dict[str, str] = field(default_factory=dict)
    method: str = "GET"
    body: bytes | None = None  # rewrite, status: the body to send instead of upstream's; raw: the whole answer, verbatim
    interval: float = 1.0  # slow-*: seconds between bytes


@functools.lru_cache(maxsize=2)
def gzip_bomb(size: int = 1 << 30) -> bytes:
    """A valid gzip stream of ``size`` zero bytes (a multiple of 1 MiB) in about ``size / 1000`` bytes.

    Built without compressing ``size`` bytes: after a full flush, deflate starts afresh, so the block for
    one MiB of zeros is the same every time and can be repeated; the trailer's CRC is computed for real.
    """
    zeros = bytes(1 << 20)
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    first = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    again = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
    crc = 0
    for _ in range(size >> 20):
        crc = zlib.crc32(zeros, crc)
    return first + again * ((size >> 20) - 1) + b"\x03\x00" + struct.pack("<II", crc, size & 0xFFFFFFFF)


class FaultProxy:
    """A loopback HTTP proxy in front of a registry that injects :class:`Fault` s and counts requests."""

    def __init__(self, upstream: str, faults: list[Fault]) -> None:
        self.upstream = f"http://{upstream}"
        self.faults = faults
        self.seen: list[tuple[str, str]] = []
        self.headers_seen: list[dict[str, str]] = []  # the request headers, in the order of ``seen``
        self.stopping = threading.Event()  # ends slow-* answers when the proxy closes
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                proxy.handle(self, "GET")

            def do_HEAD(self) -> None:
                proxy.handle(self, "HEAD")

        self.server = _QuietServer(("127.0.0.1", 0), Handler)
        _SERVERS.append(self.server)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.host = f"127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()
        if self.server in _SERVERS:
            _SERVERS.remove(self.server)

    def _fault_for(self, method: str, path: str) -> Fault | None:
        for fault in self.faults:
            if fault.times != 0 and fault.method == method and re.search(fault.pattern, path):
                if fault.times > 0:
                    fault.times -= 1
                return fault
        return None

    def handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        path = handler.path
        self.seen.append((method, path))
        self.headers_seen.append(dict(handler.headers.items()))
        if path.startswith("http://"):  # used as a forward proxy (HTTP_PROXY): the request line has the full URL
            path = "/" + path.split("/", 3)[3]
        fault = self._fault_for(method, path)
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in ("host", "connection")}
        if fault is not None and fault.action == "reset-before-answer":
            _reset(handler)
            return
        if fault is not None and fault.action == "redirect":
            self._reply(handler, fault.status, {"Location": fault.headers["Location"].format(path=path)}, b"")
            return
        if fault is not None and fault.action == "slow-headers":
            # A status line, then one header byte per interval: the answer never gets past its headers.
            handler.wfile.write(b"HTTP/1.1 200 OK\r\n")
            self._dribble(handler, b"X-Slow: " + b"z" * 100000, fault.interval)
            return
        if fault is not None and fault.action == "status":
            body = json.dumps({"errors": [{"code": "INJECTED", "message": f"injected HTTP {fault.status}"}]}).encode()
            headers = {k: v.replace("{proxy}", self.host) for k, v in fault.headers.items()}
            self._reply(handler, fault.status, {"Content-Type": "application/json", **headers},
                        body if fault.body is None else fault.body)
            return
        if fault is not None and fault.action == "raw":  # status line, headers and body exactly as given, then close
            handler.close_connection = True
            handler.wfile.write(fault.body or b"")
            handler.wfile.flush()
            return
        if fault is not None and fault.action == "accept-docker-only" and "," in headers.get("Accept", ""):
            headers["Accept"] = f"{DOCKER_MANIFEST}, {DOCKER_LIST}"
        upstream = requests.request(method, self.upstream + path, headers=headers, timeout=30, allow_redirects=False)
        body = upstream.content
        keep = {"content-type": "Content-Type", "docker-content-digest": "Docker-Content-Digest", "www-authenticate": "WWW-Authenticate",
                "location": "Location", "retry-after": "Retry-After"}
        out = {keep[k.lower()]: v for k, v in upstream.headers.items() if k.lower() in keep}
        if fault is not None and fault.action == "nvcr-challenge" and "WWW-Authenticate" in upstream.headers:
            realm = re.search(r'realm="([^"]+)"', upstream.headers["WWW-Authenticate"])
            repo = path.split("/v2/", 1)[1].rsplit("/manifests/", 1)[0].rsplit("/blobs/", 1)[0]
            assert realm is not None
            out["WWW-Authenticate"] = f'Bearer realm="{realm.group(1)}?scope=repository:{repo}:pull,push"'
        if fault is not None and fault.action == "corrupt" and body:
            body = body[:-1] + bytes([body[-1] ^ 0xFF])
        if fault is not None and fault.action == "not-json":
            body = b"<html><body>502 Bad Gateway from a captive portal</body></html>"
            out["Content-Type"] = OCI_MANIFEST
            out.pop("Docker-Content-Digest", None)
        if fault is not None and fault.action == "rewrite":
            out.update(fault.headers)
            if fault.body is not None:
                body = fault.body
                out.pop("Docker-Content-Digest", None)
        if fault is not None and fault.action in ("reset", "slow-body"):
            handler.send_response(upstream.status_code)
            for key, value in out.items():
                handler.send_header(key, value)
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            if fault.action == "slow-body":  # one byte per interval, never the whole body
                self._dribble(handler, body[:-1], fault.interval)
                return
            handler.wfile.write(body[: len(body) // 2])
            handler.wfile.flush()
            time.sleep(0.05)  # let the client start reading the body before the reset
            _reset(handler)
            return
        if fault is not None and fault.action == "cut":
            out["Content-Length"] = str(len(body))
            handler.send_response(upstream.status_code)
            for key, value in out.items():
                handler.send_header(key, value)
            handler.send_header("Connection", "close")
            handler.end_headers()
            handler.wfile.write(body[: len(body) // 2])
            handler.wfile.flush()
            handler.close_connection = True
            handler.connection.shutdown(socket.SHUT_RDWR)
            return
        self._reply(handler, upstream.status_code, out, body if method != "HEAD" else b"", upstream.headers.get("Content-Length"))

    def _dribble(self, handler: BaseHTTPRequestHandler, data: bytes, interval: float) -> None:
        """Send ``data`` one byte per ``interval`` until it ends, the client leaves or the proxy closes."""
        handler.close_connection = True
        for index in range(len(data)):
            try:
                handler.wfile.write(data[index : index + 1])
                handler.wfile.flush()
            except OSError:
                return
            if self.stopping.wait(interval):
                return

    @staticmethod
    def _reply(handler: BaseHTTPRequestHandler, status: int, headers: dict[str, str], body: bytes, length: str | None = None) -> None:
        handler.send_response(status)
        for key, value in headers.items():
            handler.send_header(key, value)
        handler.send_header("Content-Length", length if (length and not body) else str(len(body)))
        handler.end_headers()
        if body:
            handler.wfile.write(body)


class _QuietServer(ThreadingHTTPServer):
    """A threading HTTP server that does not print the client errors the faults cause on purpose."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass


def _reset(handler: BaseHTTPRequestHandler) -> None:
    """Abort the connection with a TCP RST (SO_LINGER 0), not a clean FIN."""
    handler.close_connection = True
    sock = handler.connection
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


@pytest.fixture(scope="session")
def registry_images() -> Images:
    return session_images()


@pytest.fixture(scope="session")
def basic_registry() -> AuthRegistry:
    return session_basic_registry()


@pytest.fixture(scope="session")
def token_registry() -> AuthRegistry:
    return session_token_registry()


@pytest.fixture(scope="session")
def tls_registries() -> TlsRegistries:
    return session_tls_registries()


@pytest.fixture
def fault_proxy(registry_images: Images) -> Iterator[Callable[..., FaultProxy]]:
    made: list[FaultProxy] = []

    def make(*faults: Fault, upstream: str | None = None) -> FaultProxy:
        proxy = FaultProxy(upstream or registry_images.host, list(faults))
        made.append(proxy)
        return proxy

    yield make
    for proxy in made:
        proxy.close()


@pytest.fixture
def image_cache(tmp_path: Path) -> Path:
    """An empty envcheck cache folder for one test (set as ENVCHECK_CACHE_DIR by the caller)."""
    folder = tmp_path / "cache"
    folder.mkdir()
    return folder



# ---- local image formats ---------------------------------------------------------------------------------

def deep_image_parts(keep_cuda12: bool) -> tuple[dict[str, Any], list[Layer]]:
    """Config and layers of the ``lab/deep`` images, to write them in local formats too."""
    return config_for("amd64", ["CUDA_VERSION=13.0.2"]), _deep_layers(session_elves(), keep_cuda12)


def write_oci_layout(folder: Path, config: dict[str, Any], layers: list[Layer], tag: str,
                     others: list[tuple[dict[str, str], dict[str, Any], list[Layer]]] = ()) -> None:  # type: ignore[assignment]
    """An OCI image layout as `skopeo copy oci:` writes it: blobs by digest, index.json with ref names.

    With ``others`` (platform, config, layers), ``tag`` names a multi-platform index holding the first
    image (as linux/<its architecture>) and the others.
    """
    blobs = folder / "blobs" / "sha256"
    blobs.mkdir(parents=True)

    def put(data: bytes) -> dict[str, Any]:
        (blobs / digest_of(data).split(":")[1]).write_bytes(data)
        return {"size": len(data), "digest": digest_of(data)}

    def image(config: dict[str, Any], layers: list[Layer]) -> dict[str, Any]:
        config = {**config, "rootfs": {"type": "layers", "diff_ids": [digest_of(layer.tar) for layer in layers]}}
        manifest = {"schemaVersion": 2, "mediaType": OCI_MANIFEST,
                    "config": {"mediaType": OCI_CONFIG, **put(json.dumps(config).encode())},
                    "layers": [{"mediaType": LAYER_TYPES[("oci", layer.compression)], **put(layer.blob())} for layer in layers]}
        return {"mediaType": OCI_MANIFEST, **put(json.dumps(manifest).encode())}

    desc = image(config, layers)
    if others:
        children = [{**desc, "platform": {"os": "linux", "architecture": config["architecture"]}}]
        children += [{**image(c, ls), "platform": platform} for platform, c, ls in others]
        desc = {"mediaType": OCI_INDEX, **put(json.dumps({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": children}).encode())}
    desc["annotations"] = {"org.opencontainers.image.ref.name": tag}
    (folder / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
    (folder / "index.json").write_text(json.dumps({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": [desc]}))


def write_docker_archive_oci(path: Path, config: dict[str, Any], layers: list[Layer], repo_tag: str) -> None:
    """``docker save`` output of Docker 25+: an OCI layout in the tar plus manifest.json naming blobs."""
    config = {**config, "rootfs": {"type": "layers", "diff_ids": [digest_of(layer.tar) for layer in layers]}}
    config_raw = json.dumps(config).encode()
    files: dict[str, bytes | None] = {"blobs/": None, "blobs/sha256/": None}
    names = []
    for layer in layers:
        files[f"blobs/sha256/{digest_of(layer.tar).split(':')[1]}"] = layer.tar
        names.append(f"blobs/sha256/{digest_of(layer.tar).split(':')[1]}")
    config_name = f"blobs/sha256/{digest_of(config_raw).split(':')[1]}"
    files[config_name] = config_raw
    files["oci-layout"] = b'{"imageLayoutVersion": "1.0.0"}'
    files["manifest.json"] = json.dumps([{"Config": config_name, "RepoTags": [repo_tag], "Layers": names}]).encode()
    path.write_bytes(tar_of(files))


def write_docker_archive(path: Path, config: dict[str, Any], layers: list[Layer], repo_tag: str) -> None:
    """``docker save`` output in the classic format: ``<id>/layer.tar`` (uncompressed), ``<hex>.json``, manifest.json.

    Members are written layers first and manifest.json last, as Docker 20.10 streams them.
    """
    config = {**config, "rootfs": {"type": "layers", "diff_ids": [digest_of(layer.tar) for layer in layers]}}
    config_raw = json.dumps(config).encode()
    config_name = digest_of(config_raw).split(":")[1] + ".json"
    files: dict[str, bytes | None] = {}
    names = []
    for index, layer in enumerate(layers):
        layer_id = hashlib.sha256(f"{index}:{digest_of(layer.tar)}".encode()).hexdigest()
        files[f"{layer_id}/"] = None
        files[f"{layer_id}/VERSION"] = b"1.0"
        files[f"{layer_id}/layer.tar"] = layer.tar
        names.append(f"{layer_id}/layer.tar")
    files[config_name] = config_raw
    files["manifest.json"] = json.dumps([{"Config": config_name, "RepoTags": [repo_tag], "Layers": names}]).encode()
    path.write_bytes(tar_of(files))
