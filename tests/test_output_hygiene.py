"""Secrets are never printed and inputs cannot inject output (issue 13): a corpus of real inputs that carry
credentials and control characters, run through every format of the real command line; every byte envcheck
writes (stdout, stderr, the report file, the cache) is searched for the secrets and for raw control
characters, and no input may start a line of its own."""

from __future__ import annotations

import json
import re
import time
import zipfile
from pathlib import Path

import pytest
from conftest import FIXTURES, run_envcheck
from seed_builders import digest, metadata_layer, oci_index, oci_manifest, write_oci_layout

from envcheck.redaction import clean, escape_controls, is_secret_name, redact

FORMATS = ("text", "json", "sarif", "github", "preflight", "html")
SECRETS = ("alice", "S3cretPw", "bob", "S3cretInc", "hf_SecretValue123", "carol", "S3cretArg", "hf_RunSecret456",
           "dave", "S3cretRun", "ghp_BuildArgSecret", "S3cretQuery", "erin", "S3cretCfg", "hf_ImageEnvSecret", "wandb_OldFormSecret",
           "frank", "S3cretGit")
# What an injected line would start with: a GitHub workflow command, or a fake envcheck line.
INJECTED = ("::error file=injected", "INJECTED")
ESC, BEL = "\x1b", "\x07"
HOSTILE = "\x1b]0;pwned\x07\x1b[2J\n::error file=injected::INJECTED\r\x1b]8;;x\x07\x9b31m"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project folder whose files carry credentials where users really put them."""
    root = tmp_path_factory.mktemp("secrets")
    (root / "requirements.txt").write_text(
        "--extra-index-url https://alice:S3cretPw@pypi.example.com/whl/cu121\n"
        "-r https://bob:S3cretInc@files.example.com/more-requirements.txt\n"
        "--index-url https://download.pytorch.org/whl/cu121?token=S3cretQuery\n"
        "torch==2.5.1+cu121\n"
        # the URL only reaches a finding's evidence, not its message
        "flash-attn @ git+https://frank:S3cretGit@github.com/Dao-AILab/flash-attention.git\n"
        "root:$6$saltsalt$S3cretPwHashNotARequirement:19000:0:99999:7:::\n")
    (root / "Dockerfile").write_text(
        "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\n"
        "ENV HF_TOKEN=hf_SecretValue123\n"
        "ENV WANDB_API_KEY wandb_OldFormSecret\n"
        "ARG PIP_INDEX_URL=https://carol:S3cretArg@idx.example.com/whl/cu121\n"
        "ARG GITHUB_TOKEN\n"
        "RUN HF_TOKEN=hf_RunSecret456 pip install torch==2.5.1+cu121 flash-attn\n"
        "RUN pip install --extra-index-url https://dave:S3cretRun@x.example.com/whl/cu121 torch\n"
        "RUN pip install ${PIP_INDEX_URL:+--index-url $PIP_INDEX_URL} transformers\n")
    (root / "pyproject.toml").write_text(
        '[project]\nname = "demo"\nversion = "1"\ndependencies = ["torch==2.5.1+cu121"]\n'
        '[[tool.uv.index]]\nname = "private"\nurl = "https://erin:S3cretCfg@uv.example.com/whl/cu121"\n')
    return root


def _outputs(corpus: Path, tmp_path: Path, cache: Path) -> dict[str, str]:
    """Everything envcheck writes for the corpus, per format (stdout + stderr + the -o file)."""
    env = {"ENVCHECK_CACHE_DIR": str(cache)}
    build_arg = ("--build-arg", "GITHUB_TOKEN=ghp_BuildArgSecret")
    out: dict[str, str] = {}
    for fmt in FORMATS:
        for verbosity in ("-q", "", "-v"):
            args = ["-f", fmt, *build_arg, *([verbosity] if verbosity else []), str(corpus)]
            done = run_envcheck(*args, cwd=tmp_path, env=env)
            assert "Traceback" not in done.stderr, done.stderr
            out[f"{fmt}{verbosity}"] = done.stdout + done.stderr
        report = tmp_path / f"report.{fmt}"
        done = run_envcheck("-f", fmt, "-o", str(report), *build_arg, str(corpus), cwd=tmp_path, env=env)
        out[f"{fmt} -o FILE"] = done.stdout + done.stderr + report.read_text(encoding="utf-8")
    # Each file on its own (the requirements source and the Dockerfile source directly), and error messages.
    for name in ("requirements.txt", "Dockerfile", "pyproject.toml"):
        done = run_envcheck("-f", "json", *build_arg, str(corpus / name), cwd=tmp_path, env=env)
        out[f"json {name}"] = done.stdout + done.stderr
    done = run_envcheck("https://alice:S3cretPw@pypi.example.com/requirements.txt", cwd=tmp_path, env=env)
    out["missing file named by a URL"] = done.stdout + done.stderr
    done = run_envcheck("--config", "https://bob:S3cretInc@x/cfg.toml", str(corpus), cwd=tmp_path, env=env)
    out["config error"] = done.stdout + done.stderr
    return out


def test_no_format_prints_a_secret(corpus: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    outputs = _outputs(corpus, tmp_path, cache)
    for name, text in outputs.items():
        for secret in SECRETS:
            assert secret not in text, f"{name} prints {secret!r}:\n{text[:3000]}"
    # The reports still say what is wrong (redaction hides the secret, not the finding) ...
    assert "https://***@pypi.example.com/whl/cu121" in outputs["text"]
    assert "G1" in outputs["preflight"]
    data = json.loads(outputs["json Dockerfile"])
    env = {e["name"]: e["value"] for t in data["targets"] for e in t["inventory"].get("env", [])}
    assert env.get("HF_TOKEN") == "***", env
    # ... and the invalid line of a file that is not a requirements file is not quoted whole.
    assert "19000:0:99999" not in outputs["text"]
    # Nothing envcheck left in its cache carries a secret either.
    for path in cache.rglob("*"):
        if path.is_file():
            data_bytes = path.read_bytes()
            for secret in SECRETS:
                assert secret.encode() not in data_bytes, f"cache file {path} holds {secret!r}"


def _hostile_inputs(root: Path) -> list[Path]:
    """Files whose names and contents carry terminal escapes and a newline followed by a workflow command."""
    root.mkdir(parents=True, exist_ok=True)
    req = root / f"requirements{HOSTILE}.txt"
    req.write_text(f"--extra-index-url https://pypi.example.com/{HOSTILE.replace(chr(10), '')}/whl/cu121\n"
                   "torch==2.5.1+cu121\n")
    docker = root / f"Dockerfile{HOSTILE}"
    docker.write_text("FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\n"
                      f"ENV TORCH_CUDA_ARCH_LIST=\"8.0{HOSTILE.replace(chr(10), '')}\"\n"
                      "RUN pip install flash-attn\n")
    # A wheel with a member whose name carries the escapes, holding an x86_64 CUDA 12 ELF file (ARCH + G1).
    wheel = root / "demo_pkg-1.0-cp311-cp311-manylinux_2_28_aarch64.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("demo_pkg-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: false\n"
                    "Tag: cp311-cp311-manylinux_2_28_aarch64\n")
        zf.writestr("demo_pkg-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: demo-pkg\nVersion: 1.0\n")
        zf.writestr(f"demo_pkg/lib{HOSTILE}.so", (FIXTURES / "binaries" / "libext_cuda12.so").read_bytes())
        zf.writestr("demo_pkg-1.0.dist-info/RECORD", "")
    # An ELF file whose DT_NEEDED names a CUDA 12 library with escapes in it (same length: a valid ELF).
    elf = (FIXTURES / "binaries" / "libext_cuda12.so").read_bytes()
    needed = b"libcudart.so.12"
    hostile_needed = b"\x1b]0;X\x07\nINJECT.so.12"[: len(needed)]
    assert needed in elf and len(hostile_needed) == len(needed)
    (root / "libhostile_needed.so").write_bytes(elf.replace(needed + b"\0", hostile_needed + b"\0", 1))
    return [req, docker, wheel, root / "libhostile_needed.so"]


@pytest.fixture(scope="module")
def hostile_image(tmp_path_factory: pytest.TempPathFactory) -> str:
    """An OCI layout whose image config ENV carries escapes and a secret (read with `envcheck image`)."""
    folder = tmp_path_factory.mktemp("hostile-image")
    layer = metadata_layer("torch", "2.5.1+cu121")
    config = json.dumps({"architecture": "arm64", "os": "linux", "config": {"Env": [
        f"EVIL={HOSTILE}", "HF_TOKEN=hf_ImageEnvSecret", "PATH=/usr/bin"]},
        "rootfs": {"type": "layers", "diff_ids": [digest(layer)]}}).encode()
    manifest = json.dumps(oci_manifest(config, [layer])).encode()
    write_oci_layout(folder, json.dumps(oci_index(manifest)).encode(), [config, layer, manifest])
    return f"oci-layout:{folder}"


def _check_clean(name: str, text: str, github: bool = False) -> None:
    assert ESC not in text and BEL not in text and "\r" not in text, f"{name}: raw control characters:\n{text[:2000]!r}"
    for line in text.splitlines():
        for start in INJECTED:
            assert not line.startswith(start), f"{name}: an input started a line: {line!r}"
        if github and line.startswith("::"):
            assert re.match(r"::(error|warning|notice) ", line), line


@pytest.mark.parametrize("fmt", FORMATS)
def test_hostile_names_cannot_inject_any_format(fmt: str, tmp_path: Path, hostile_image: str) -> None:
    paths = _hostile_inputs(tmp_path / "in")
    report = tmp_path / "report.out"
    runs = {
        "files": run_envcheck("-v", "-f", fmt, *map(str, paths), cwd=tmp_path),
        "-o FILE": run_envcheck("-f", fmt, "-o", str(report), *map(str, paths), cwd=tmp_path),
        "image": run_envcheck("image", "-v", "-f", fmt, hostile_image, cwd=tmp_path),
        "missing": run_envcheck("-f", fmt, str(tmp_path / f"nothing{HOSTILE}"), cwd=tmp_path),
    }
    shown = {name: done.stdout + done.stderr for name, done in runs.items()}
    shown["-o FILE (the file)"] = report.read_text(encoding="utf-8")
    for name, text in shown.items():
        assert "Traceback" not in text, text
        _check_clean(f"{fmt} {name}", text, github=fmt == "github")
        assert "hf_ImageEnvSecret" not in text
    # The escapes are visible, so the reader still sees what the name really holds.
    if fmt in ("text", "github"):
        assert "\\x1b]0;pwned\\x07" in shown["files"], shown["files"][:3000]
        assert "INJECT" in shown["files"]  # the DT_NEEDED name, escaped


def test_redaction_of_the_common_shapes() -> None:
    """Positive and negative cases of the one redaction function every output goes through."""
    assert redact("--extra-index-url https://user:pa%40ss@host/simple") == "--extra-index-url https://***@host/simple"
    assert redact("git+https://ghp_token1234@github.com/o/r.git") == "git+https://***@github.com/o/r.git"
    assert redact("RUN HF_TOKEN=hf_abc pip install x") == "RUN HF_TOKEN=*** pip install x"
    assert redact('ENV AWS_SECRET_ACCESS_KEY="a b"') == 'ENV AWS_SECRET_ACCESS_KEY="***"'
    assert redact("https://h/simple?token=abc&x=1") == "https://h/simple?token=***&x=1"
    assert redact("ENV HF_TOKEN hf_abc def") == "ENV HF_TOKEN ***" and redact("ENV PATH /usr/bin") == "ENV PATH /usr/bin"
    assert redact("Authorization: Bearer abc.def") == "Authorization: Bearer ***"
    for kept in ("torch==2.5.1+cu121", "TOKENIZERS_PARALLELISM=false", "PATH=/usr/bin", "AUTHOR=me",
                 "https://download.pytorch.org/whl/cu121", "HF_TOKEN=$HF_TOKEN", "the token endpoint said no",
                 "G1 PASS key: value"):
        assert redact(kept) == kept
    assert is_secret_name("HF_TOKEN") and is_secret_name("apiKey") and is_secret_name("PIP_PASSWORD")
    assert not is_secret_name("TOKENIZERS_PARALLELISM") and not is_secret_name("PIP_KEYRING_PROVIDER")


def test_escaping_is_visible_and_total() -> None:
    assert escape_controls("a\x1b[2Jb\nc\td\x07\x9b\u2028\u202e") == "a\\x1b[2Jb\\nc\\td\\x07\\x9b\\u2028\\u202e"
    assert escape_controls("plain é ü 日本") == "plain é ü 日本"
    assert clean(clean(HOSTILE)) == clean(HOSTILE)
    assert "\n" not in clean(HOSTILE) and ESC not in clean(HOSTILE)


# Credentials recognised by their value alone, under names that say nothing (issue 25 item 4).
VALUE_SECRETS = {
    "github": "ghp_" + "Q7wErTy8UiOp1AsDfGhJk2LzXcVbNm3Qw4Er",
    "hugging face": "hf_" + "xYzAbCdEfGhIjKlMnOpQrStUvWxYz0123456",
    "aws": "AKIA" + "Q3EXAMPLE7ABCDEF",
    "slack": "xoxb-" + "1234567890-0987654321-AbCdEfGhIjKlMnOp",
    "private key": "MIIEowIBAAKCAQEAs3cr3tK3yB0dy",
}


@pytest.fixture(scope="module")
def value_secret_image(tmp_path_factory: pytest.TempPathFactory) -> str:
    """An OCI layout whose config Env and build history carry tokens under names that say nothing."""
    folder = tmp_path_factory.mktemp("value-secret-image")
    layer = metadata_layer("torch", "2.9.0+cu130")
    config = json.dumps({"architecture": "arm64", "os": "linux",
                         "config": {"Env": [f"GH={VALUE_SECRETS['github']}", f"CLOUD={VALUE_SECRETS['aws']}"]},
                         "history": [{"created_by": f"RUN huggingface-cli login --token {VALUE_SECRETS['hugging face']}"},
                                     {"created_by": f"RUN curl -H 'X-Slack: {VALUE_SECRETS['slack']}' https://x.example"}],
                         "rootfs": {"type": "layers", "diff_ids": [digest(layer)]}}).encode()
    manifest = json.dumps(oci_manifest(config, [layer])).encode()
    write_oci_layout(folder, json.dumps(oci_index(manifest)).encode(), [config, layer, manifest])
    return f"oci-layout:{folder}"


def test_secrets_recognised_by_value_in_every_format(tmp_path: Path, value_secret_image: str) -> None:
    """GitHub, Hugging Face, AWS and Slack tokens and private keys are masked whatever names them, in every
    format, the snapshot and the HTML build history included; the finding itself stays."""
    (tmp_path / "Dockerfile").write_text(
        "FROM nvidia/cuda:12.8.0-devel-ubuntu24.04\n"
        f"ENV GH={VALUE_SECRETS['github']}\n"
        f"ARG CLOUD={VALUE_SECRETS['aws']}\n"
        f"RUN huggingface-cli login --token {VALUE_SECRETS['hugging face']} && echo '-----BEGIN RSA PRIVATE KEY-----\\n"
        f"{VALUE_SECRETS['private key']}\\n-----END RSA PRIVATE KEY-----' > /k\n")
    shown: dict[str, str] = {}
    for fmt in (*FORMATS, "snapshot"):
        done = run_envcheck("-v", "-f", fmt, "Dockerfile", cwd=tmp_path)
        shown[f"Dockerfile {fmt}"] = done.stdout + done.stderr
        done = run_envcheck("image", "-v", "-f", fmt, value_secret_image, cwd=tmp_path)
        shown[f"image {fmt}"] = done.stdout + done.stderr
    done = run_envcheck("snapshot", value_secret_image, "-o", "-", cwd=tmp_path)
    shown["image snapshot -o -"] = done.stdout + done.stderr
    done = run_envcheck("--diff", "Dockerfile", cwd=tmp_path)
    shown["--diff"] = done.stdout + done.stderr
    for name, text in shown.items():
        assert "Traceback" not in text, text
        for kind, secret in VALUE_SECRETS.items():
            assert secret not in text and secret[8:] not in text, f"{name} prints the {kind} secret:\n{text[:3000]}"
    assert "G1" in shown["Dockerfile text"] and "ghp_***" in shown["Dockerfile json"]
    assert "--token hf_***" in shown["image html"]  # the build-history row is still there, masked
    assert "+FROM nvidia/cuda:13" in shown["--diff"]  # the diff still shows the change


def test_diff_context_lines_are_redacted(tmp_path: Path) -> None:
    """--diff (and --fix --diff) shows context lines through the same redaction as every other output."""
    (tmp_path / "Dockerfile").write_text(
        "FROM nvidia/cuda:12.8.0-runtime-ubuntu24.04\n"
        "ENV HF_TOKEN=hf_ContextLineSecret\n"
        "ENV AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY\n"
        "ARG PIP_INDEX_URL=https://ann:S3cretCtx@idx.example.com/simple\n")
    for args in (("--diff",), ("--fix", "--diff")):
        done = run_envcheck(*args, "Dockerfile", cwd=tmp_path)
        text = done.stdout + done.stderr
        assert "+FROM nvidia/cuda:13" in text, text
        for secret in ("hf_ContextLineSecret", "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY", "S3cretCtx", "ann:"):
            assert secret not in text, f"{args} prints {secret}:\n{text}"
        assert " ENV HF_TOKEN=***" in text and " ARG PIP_INDEX_URL=https://***@idx.example.com/simple" in text


@pytest.mark.parametrize("folder", ["::error title=INJECTED::owned", "::add-mask::torch", "  ::warning::x", "x ##[add-mask]torch"])
def test_no_input_starts_a_workflow_command(tmp_path: Path, folder: str) -> None:
    """A folder named like a workflow command starts no line of any format (the runner strips leading blanks
    first), nor of --diff; only the github format writes commands, and only its own."""
    project = tmp_path / folder
    project.mkdir()
    (project / "requirements.txt").write_text("cupy-cuda12x\n")
    (project / "Dockerfile").write_text("FROM nvidia/cuda:12.8.0-runtime-ubuntu24.04\n")
    runs = {fmt: run_envcheck("-v", "-f", fmt, folder, cwd=tmp_path) for fmt in (*FORMATS, "snapshot")}
    runs["--diff"] = run_envcheck("--diff", folder, cwd=tmp_path)
    runs["--diff of the folder's files"] = run_envcheck("--diff", f"{folder}/Dockerfile", f"{folder}/requirements.txt", cwd=tmp_path)
    runs["--fix (stderr)"] = run_envcheck("--fix", "-v", folder, cwd=tmp_path)  # says which files it fixed
    runs["a missing file (stderr)"] = run_envcheck(f"{folder}/nothing.txt", cwd=tmp_path)
    for name, done in runs.items():
        assert "Traceback" not in done.stderr, done.stderr
        for line in (done.stdout + done.stderr).splitlines():
            if name == "github" and line.startswith("::"):
                m = re.match(r"::(error|warning|notice) ([^:]*)::", line)  # properties: , and : escaped
                assert m, line
                props = dict(p.split("=", 1) for p in m.group(2).split(","))
                assert set(props) <= {"file", "line", "title"} and props["title"].startswith("G"), line
                continue
            assert not line.lstrip().startswith("::") and "##[" not in line, f"{name}: {line!r}"
    shown = runs["text"].stdout.replace("\\x3a", ":").replace("\\x5b", "[")
    assert folder.strip() in shown  # the name is still shown, one character escaped


def test_a_secret_only_in_evidence_is_masked(tmp_path: Path) -> None:
    """A finding whose message is clean but whose evidence holds a credential (a merged report written by
    anyone): the evidence is masked in every format, not only the fields the finding compares by."""
    report = json.loads(run_envcheck("-f", "json", str(FIXTURES.parent / "examples" / "requirements-cuda12.txt"),
                                     cwd=tmp_path).stdout)
    for target in report["targets"]:
        for finding in target["findings"]:
            finding["evidence"] = {"url": "git+https://frank:S3cretGit@github.com/x/y.git", "HF_TOKEN": "S3cretGit"}
    (tmp_path / "report.json").write_text(json.dumps(report))
    for fmt in ("json", "html", "snapshot", "sarif", "text"):
        done = run_envcheck("merge", "-f", fmt, "-v", str(tmp_path / "report.json"), cwd=tmp_path)
        assert done.returncode == 1, done.stderr
        assert "S3cretGit" not in done.stdout + done.stderr and "frank" not in done.stdout, fmt
        if fmt == "json":  # masked, not dropped
            assert "git+https://***@github.com/x/y.git" in done.stdout


def test_credentials_given_as_command_words_are_masked(tmp_path: Path) -> None:
    """A build history (and any RUN text) holds credentials as command words, where no name= says so:
    `--token X`, `--api-key X`, `curl -u user:pass`, `docker login -p X`, .netrc text. None is printed."""
    secrets = ("S3cretOpt1", "S3cretOpt2", "S3cretCurl", "S3cretLogin", "S3cretNetrc")
    history = [f"RUN huggingface-cli login --token {secrets[0]} && pip install torch",
               f"RUN vllm serve m --api-key '{secrets[1]}' --port 8000",
               f"RUN curl -u alice:{secrets[2]} https://x.example/a.whl -o /a.whl && pip install /a.whl",
               f"RUN docker login -u bob -p {secrets[3]} nvcr.io",
               f"RUN echo 'machine pypi.example.com login alice password {secrets[4]}' > /root/.netrc"]
    _image_with_history(tmp_path / "image", history)
    for fmt in (*FORMATS, "snapshot"):
        done = run_envcheck("image", "-v", "-f", fmt, f"oci-layout:{tmp_path / 'image'}", cwd=tmp_path)
        assert "Traceback" not in done.stderr, done.stderr
        for secret in secrets:
            assert secret not in done.stdout + done.stderr, f"{fmt} prints {secret}"
        if fmt == "html":  # the rows are still there, masked
            assert "login --token ***" in done.stdout and "curl -u alice:***" in done.stdout, done.stdout[-3000:]
    for text, masked in (("docker login --password-stdin -u x nvcr.io", None), ("docker run -u 1000:1000 x", None),
                         ("pip install --token-file /t torch", None), ("vllm serve m --api-key $KEY", None),
                         ("vllm serve m --api-key abc", "vllm serve m --api-key ***")):
        assert redact(text) == (masked or text)


def _image_with_history(layout: Path, history: list[str]) -> None:
    """An OCI layout of an arm64 image holding a cu130 torch, whose history holds ``history`` (RUN lines)."""
    layer = metadata_layer("torch", "2.9.0+cu130")
    config = json.dumps({"architecture": "arm64", "os": "linux", "history": [{"created_by": h} for h in history],
                         "rootfs": {"type": "layers", "diff_ids": [digest(layer)]}}).encode()
    manifest = json.dumps(oci_manifest(config, [layer])).encode()
    write_oci_layout(layout, json.dumps(oci_index(manifest)).encode(), [config, layer, manifest])


# One credential in each form a kind carries one (the RUN lines of an image's history are printed whole).
CREDENTIAL_FORMS = {
    "S3cTrusted": ("pip install --trusted-host alice:S3cTrusted@pypi.example.com torch", "--trusted-host alice:***@pypi"),
    "S3cProxy": ("pip install --proxy u:S3cProxy@proxy.example.com:3128 torch", "--proxy u:***@proxy"),
    "S3cMysql": ("mysql -uroot -pS3cMysql -e 'select 1'", "mysql -uroot -p***"),
    "S3cSshpass": ("sshpass -p S3cSshpass ssh node2 true", "sshpass -p ***"),
    "S3cZip": ("unzip -P S3cZip models.zip", "unzip -P ***"),
    "S3cRedis": ("redis-cli -h cache -a S3cRedis ping", "redis-cli -h cache -a ***"),
    "S3cOpenssl": ("openssl enc -d -aes256 -pass pass:S3cOpenssl -in k.enc", "-pass ***"),
    "S3cChpasswd": ("echo 'root:S3cChpasswd' | chpasswd", "echo '***' | chpasswd"),
    "S3cStdin": ("echo S3cStdin | docker login -u x --password-stdin nvcr.io", "echo *** | docker login"),
    "S3cWandb": ("wandb login --relogin 0123456789abcdefS3cWandb", "wandb login --relogin ***"),
    "S3cNgcKey": ("echo nvapi-S3cNgcKey0123456789abcdefghij > /k", "nvapi-***"),
    "S3cOpenAI": ("echo sk-proj-S3cOpenAI0123456789abcdefghij > /k", "sk-proj-***"),
    "S3cHeader": ("curl -H 'X-Api-Key: S3cHeader' -o /a.whl https://x.example/a.whl", "-H 'X-Api-Key: ***'"),
    "S3cEnvOpt": ("docker run --env=HF_TOKEN=S3cEnvOpt img", "--env=HF_TOKEN=***"),
    "S3cEnviron": ("python -c \"import os; os.environ['OPENAI_API_KEY'] = 'S3cEnviron'\"", "['OPENAI_API_KEY'] = '***'"),
    "S3cFish": ("set -gx HF_TOKEN S3cFish", "set -gx HF_TOKEN ***"),
    "S3cDbPwd": ("DB_PWD=S3cDbPwd ./migrate", "DB_PWD=***"),
}


def test_credentials_in_every_form_are_masked(tmp_path: Path) -> None:
    """Wherever a line of input reaches an output it passes the same redaction, whatever form the credential
    takes: no name= says so in `--trusted-host u:pw@host`, `mysql -pX`, `echo pw | chpasswd`, an API key
    known by its prefix, a header, a quoted Python key."""
    history = [f"RUN {line} && pip install torch" for line, _ in CREDENTIAL_FORMS.values()]
    _image_with_history(tmp_path / "image", history)
    for fmt in (*FORMATS, "snapshot"):
        done = run_envcheck("image", "-v", "-f", fmt, f"oci-layout:{tmp_path / 'image'}", cwd=tmp_path)
        assert "Traceback" not in done.stderr, done.stderr
        for secret in CREDENTIAL_FORMS:
            assert secret not in done.stdout + done.stderr, f"{fmt} prints {secret}"
        if fmt == "html":  # the rows are still there, masked where the credential was
            for _, masked in CREDENTIAL_FORMS.values():
                assert masked.replace("'", "&#x27;") in done.stdout, masked


@pytest.mark.parametrize("text", [
    "FROM nvcr.io/nvidia/pytorch:25.01-py3@sha256:0123abcd", "ssh -o StrictHostKeyChecking=no node2",
    "ENV TIKTOKEN_ENCODINGS_BASE=/data/tiktoken", "tiktoken: binary built for x86_64, not aarch64 (/x.so)",
    "mkdir -p /models && cp -pr a b", "  - key: nvidia.com/gpu", "#sk-container-id-2 label.sk-toggleable__label",
    "git clone git@github.com:org/repo.git", "mysql -u root -p$MYSQL_PASSWORD db", "- name: HF_TOKEN\n  valueFrom:",
    "echo \"$PW\" | docker login --password-stdin", "google-auth: needs a newer protobuf than the one installed"])
def test_redaction_leaves_what_is_no_credential(text: str) -> None:
    assert redact(text) == text


def test_diff_masks_a_secret_that_takes_two_lines(tmp_path: Path) -> None:
    """A Kubernetes env entry names the secret on one line and holds it on the next; a private key or a
    .netrc written by a heredoc takes several: --diff's context lines mask them and keep the hunks right."""
    (tmp_path / "pod.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n"
        "    image: nvidia/cuda:12.4.1-runtime-ubuntu22.04\n    env:\n    - name: HF_TOKEN\n      value: S3cK8sValue\n"
        "    command: [\"bash\", \"-c\", \"python train.py\"]\n")
    (tmp_path / "Dockerfile").write_text(
        "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\nRUN cat > /root/.netrc <<EOF\nmachine h.example.com\nlogin u\n"
        "password S3cNetrcLine\nEOF\nRUN cat > /root/.pypirc <<EOF\n[pypi]\npassword = S3cPypirc\nEOF\n"
        "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04 AS keyed\nCOPY <<EOF /k.pem\n-----BEGIN RSA PRIVATE KEY-----\n"
        "MIIEowS3cKeyBody\nEOF\n")
    for name in ("pod.yaml", "Dockerfile"):
        done = run_envcheck("--diff", name, cwd=tmp_path)
        text = done.stdout + done.stderr
        assert "+    image: nvidia/cuda:13" in text or "+FROM nvidia/cuda:13" in text, text
        for secret in ("S3cK8sValue", "S3cNetrcLine", "S3cPypirc", "S3cKeyBody"):
            assert secret not in text, f"{name}: --diff prints {secret}:\n{text}"
    done = run_envcheck("--diff", "pod.yaml", cwd=tmp_path)
    assert "@@ -5,7 +5,7 @@" in done.stdout and "       value: ***\n" in done.stdout, done.stdout


def test_caches_hold_no_secret(tmp_path: Path) -> None:
    """The folder snapshot and the per-file scan cache keep what was read redacted as it is printed: a
    Requires-Dist URL with a password in it is masked there too, and the answer from the snapshot is the same."""
    info = tmp_path / "env" / "lib" / "python3.12" / "site-packages" / "foo-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: foo\nVersion: 1.0\n"
                                   "Requires-Dist: bar @ https://u:S3cRequires@h.example.com/bar.whl\n")
    (info / "RECORD").write_text("")
    (tmp_path / "env" / "lib" / "python3.12" / "site-packages" / "foo").mkdir()
    time.sleep(2.2)  # older than the folder snapshot's racy window (cache.RACY_NS, 2 s): else no snapshot is kept
    cache = tmp_path / "cache"
    runs = [run_envcheck("-f", "json", str(tmp_path / "env"), cwd=tmp_path, env={"ENVCHECK_CACHE_DIR": str(cache)})
            for _ in range(2)]
    stored = [p for p in cache.rglob("*") if p.is_file()]
    assert any(p.name.startswith("folder-") for p in stored), stored
    for path in stored:
        assert b"S3cRequires" not in path.read_bytes(), path
    assert runs[0].stdout == runs[1].stdout and "S3cRequires" not in runs[0].stdout
    assert "bar @ https://***@h.example.com/bar.whl" in runs[0].stdout


def test_lines_envcheck_says_on_stderr_are_redacted(tmp_path: Path) -> None:
    """What envcheck says on stderr before any report (a link skipped, a kind told from content) goes through
    the same redaction as the report: a link target that holds a token is masked there too."""
    secret_dir = tmp_path / "ghp_S3cLinkTarget0123456789abcdef"
    secret_dir.mkdir()
    (secret_dir / "r.txt").write_text("torch==2.5.1+cu121\n")
    project = tmp_path / "project"
    project.mkdir()
    (project / "requirements.txt").symlink_to(secret_dir / "r.txt")
    (project / "requirements-dev.txt").write_text("numpy\n")
    for verbosity in ("", "-v"):
        done = run_envcheck(*([verbosity] if verbosity else []), str(project), cwd=tmp_path)
        assert "outside the folder" in done.stderr and "ghp_***" in done.stderr, done.stderr
        assert "S3cLinkTarget" not in done.stdout + done.stderr, done.stderr


def test_diff_writes_no_line_break_or_control_from_the_input(tmp_path: Path) -> None:
    """--diff split lines at U+2028 and NEL (str.splitlines) and wrote them raw, with the file's folder name
    (a newline in it started a line of its own): lines now end at a newline only, as the readers count them,
    and every control or line-breaking character of a name or a line is written visibly (tabs aside)."""
    folder = tmp_path / "x\n::error::PWN"
    folder.mkdir()
    (folder / "Dockerfile").write_bytes(
        "FROM nvidia/cuda:12.4.1-runtime-ubuntu22.04\n# a\u2028::error::LS\n# b\x85::warning::NEL \u202eevil\n"
        "# c\r::error::CR\x1b[31m\tTAB\n".encode())
    done = run_envcheck("--diff", str(folder / "Dockerfile"), cwd=tmp_path)
    text = done.stdout
    assert "@@ -1,4 +1,4 @@" in text and "+FROM nvidia/cuda:13" in text, text
    assert " # a\\u2028::error::LS\n # b\\x85::warning::NEL \\u202eevil\n # c\\r::error::CR\\x1b[31m\tTAB\n" in text, text
    assert "--- a/" + str(tmp_path).lstrip("/") + "/x\\n::error::PWN/Dockerfile\n" in text, text
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]", text), ascii(text)
    assert not any(line.lstrip().startswith("::") for line in text.splitlines()), text


def test_the_value_of_a_secret_option_is_no_package(tmp_path: Path) -> None:
    """`pip install --password X torch`: pip has no such option, and X became a package named `x`, lower-cased
    past every redaction. The word after a secret-named option is its value: neither a package nor printed."""
    (tmp_path / "Dockerfile").write_text("FROM nvcr.io/nvidia/pytorch:25.11-py3\n"
                                         "RUN pip install --password S3cPipOption --api-token=S3cInline torch\n")
    done = run_envcheck("-f", "json", "-v", str(tmp_path / "Dockerfile"), cwd=tmp_path)
    packages = json.loads(done.stdout)["targets"][0]["inventory"]["packages"]
    assert "torch" in [p["name"] for p in packages if p.get("role") == "requirement"], packages
    assert "s3c" not in done.stdout.lower(), done.stdout
