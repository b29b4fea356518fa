"""Command line: parse options, build targets, run the engine, render, map to an exit code. Nothing else."""

from __future__ import annotations

import argparse
import gc
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, NoReturn

from envcheck import __version__
from envcheck.errors import EnvcheckError, UsageError

if TYPE_CHECKING:
    from envcheck.config import Config
    from envcheck.engine import Target
    from envcheck.model import Report

# Each subcommand and its module (envcheck.commands.NAME).
COMMANDS = {name: f"envcheck.commands.{name}" for name in (
    "image", "container", "preflight", "snapshot", "diff", "rules", "cache", "catalog", "merge")}


def _common(parser: argparse.ArgumentParser, default_format: str | None = None) -> None:
    g = parser.add_argument_group("output and policy")
    from envcheck import formats
    g.add_argument("-f", "--format", choices=formats.names(), default=default_format,
                   help="output format (default: text; preflight for `envcheck preflight`): "
                        + "; ".join(f"{f.name}: {f.what}" for f in formats.FORMATS.values()))
    g.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE instead of stdout (-: stdout)")
    g.add_argument("--fail-on", choices=("fail", "warn", "never"), help="lowest status that makes the exit code 1 (default: fail)")
    g.add_argument("--ignore", action="append", default=[], metavar="RULE", help="ignore a rule id, a whole gotcha (G2) or policy (the policy rules); repeatable")
    g.add_argument("--config", metavar="FILE", help="config file (default: .envcheck.toml or [tool.envcheck] in pyproject.toml, in the working folder or one above it up to the repository root)")
    g.add_argument("--profile", help="target profile name or TOML file (default: dgx-spark)")
    g.add_argument("--nvfp4", action="store_true", help="WARN when no sm_121a kernels exist (you plan to run NVFP4)")
    g.add_argument("--no-cache", action="store_true", help="do not read or write envcheck's cache")
    g.add_argument("-q", "--quiet", action="count", default=0, help="show only failures")
    g.add_argument("-v", "--verbose", action="count", default=0, help="also show passing and informational findings")
    g.add_argument("--debug", action="store_true", help="show tracebacks for internal errors")


class _Parser(argparse.ArgumentParser):
    """argparse, naming the closest option for a mistyped one (`--formt` -> `--format`), as for a command word."""

    def error(self, message: str) -> NoReturn:
        if message.startswith("unrecognized arguments: "):
            import difflib
            known = [o for action in self._actions for o in action.option_strings if o.startswith("--")]
            hints = [(word.split("=")[0], close[0]) for word in message.split(": ", 1)[1].split()
                     if word.startswith("--") and (close := difflib.get_close_matches(word.split("=")[0], known, n=1, cutoff=0.6))]
            if len(hints) == 1:
                message += f" (did you mean {hints[0][1]}?)"
            elif hints:
                message += f" (did you mean {', '.join(f'{right} for {wrong}' for wrong, right in hints)}?)"
        super().error(message)


def _check_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="envcheck",
        description="Will this Python environment or container work on an NVIDIA DGX Spark (GB10, aarch64, CUDA 13, sm_121)?",
        epilog="Subcommands: envcheck rules [ID], envcheck image REF, envcheck catalog REGISTRY/REPOSITORY, "
        "envcheck merge REPORT.json..., envcheck container IMAGE, envcheck preflight, "
        "envcheck snapshot [TARGET] -o FILE, envcheck diff A B, envcheck cache [info|clean|update-facts]. "
        "Exit codes: 0 clean, 1 findings at/above --fail-on, 2 usage error or unreadable target, 3 a service was unreachable.",
    )
    _check_parser_options(parser)
    _common(parser)
    return parser


def _check_parser_options(parser: argparse.ArgumentParser) -> None:
    from envcheck.commands import check, fix
    parser.add_argument("-V", "--version", action="version", version=f"envcheck {__version__}")
    check.configure(parser)
    fix.configure(parser)


def _command_parser(command: str) -> tuple[argparse.ArgumentParser, ModuleType]:
    """The parser of ``envcheck COMMAND``: the command word is its first positional, so options may come
    before or after it."""
    module = _command_module(command)
    parser = _CommandParser(prog=f"envcheck {command}", description=getattr(module, "HELP", None))
    parser.add_argument("command", choices=(command,), help=argparse.SUPPRESS)
    module.configure(parser)
    if not hasattr(module, "run"):  # rules and cache print their own output: no report options
        _common(parser, getattr(module, "DEFAULT_FORMAT", None))
    else:
        parser.add_argument("--debug", action="store_true", help="show tracebacks for internal errors")
    return parser, module


def _command_word(argv: list[str]) -> str | None:
    """The subcommand named, if any: the first positional word as argparse finds it over every command's
    options (not ``envcheck --target image Dockerfile``). Runs naming no command pay for no parser."""
    if argv and argv[0] in COMMANDS:
        return argv[0]
    before = argv[:argv.index("--")] if "--" in argv else argv
    if not any(word in COMMANDS for word in before):
        return None
    scanner = _OptionScanner(prog="envcheck", add_help=False, conflict_handler="resolve")
    scanner.add_argument("words", nargs="*")
    _common(scanner)
    _check_parser_options(scanner)
    for command in COMMANDS:
        try:
            _command_module(command).configure(scanner)
        except UsageError:  # a command this build lacks: its word, if named, gets that error from its parser
            continue
    try:
        words = scanner.parse_known_args(before)[0].words
    except _ScanError:  # an option without its value: the command's own parser will say so
        words = [w for w in before if not w.startswith("-")]
    return words[0] if words and words[0] in COMMANDS else None


class _ScanError(Exception):
    pass


class _CommandParser(_Parser):
    """A command's parser; an option it lacks given before its word (`--kind x image`) is named as that, where
    argparse would call the option's value a wrong command word."""
    argv: Sequence[str] = ()

    def error(self, message: str) -> NoReturn:
        value = message.partition("invalid choice: ")[2].partition(" (")[0].strip("'")
        if message.startswith("argument command:") and value in self.argv[1:]:
            option = self.argv[self.argv.index(value) - 1]
            message = f"{option} is not an option of `{self.prog}` (`{self.prog} --help` lists them)"
        super().error(message)


class _OptionScanner(argparse.ArgumentParser):
    """Every command's options, no positionals, no checks of values: argparse tells a value from a command."""

    def add_argument(self, *names: str, **kwargs: Any) -> argparse.Action:
        if names and not names[0].startswith("-") and names[0] != "words":
            return argparse.Action([], names[0])  # a command's positional: not needed to find the command word
        for key in ("choices", "type", "required", "help", "default", "version"):
            kwargs.pop(key, None)
        if kwargs.get("action") == "version":
            kwargs["action"] = "store_true"
        return super().add_argument(*names, **kwargs)

    def add_argument_group(self, *args: Any, **kwargs: Any) -> Any:
        if "_optionals" not in vars(self):  # argparse's own groups, made in __init__
            return super().add_argument_group(*args, **kwargs)
        return self

    def error(self, message: str) -> NoReturn:
        raise _ScanError(message)


def _command_module(name: str) -> ModuleType:
    try:
        return importlib.import_module(COMMANDS[name])
    except ImportError as exc:
        raise UsageError(f"`envcheck {name}` is not available in this build: {exc}") from exc


# The cyclic GC's first threshold while envcheck runs (default 700): a folder scan allocates hundreds of
# thousands of long-lived objects and almost no cycles; at 700 collection took a tenth of a serial scan.
GC_THRESHOLD = (100_000, 50, 100)


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args_list
    threshold = gc.get_threshold()
    gc.set_threshold(*GC_THRESHOLD)  # scan workers, forked from this process, inherit it
    try:
        return _run(args_list)
    except EnvcheckError as exc:
        print(f"envcheck: error: {_clean(exc.message)}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("envcheck: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug in envcheck: say so briefly, traceback only with --debug
        if debug:
            raise
        print(f"envcheck: internal error: {type(exc).__name__}: {_clean(str(exc))} (run with --debug for a traceback)", file=sys.stderr)
        return 2
    finally:
        gc.set_threshold(*threshold)


def console() -> NoReturn:
    """The ``envcheck`` command: :func:`main`, then a normal exit (handlers and finalizers run)."""
    code = main()
    gc.freeze()  # the last collection then skips what the run left: a cheap exit (BENCHMARKS.md)
    sys.exit(code)


def _clean(text: str) -> str:
    from envcheck.redaction import clean, no_command_lines
    return no_command_lines(clean(text))


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """Options anywhere, except after ``--`` (Python 3.11's intermixed parsing still reads options there: the
    words after it are parsed as stand-ins that cannot look like options, then put back)."""
    if "--" not in argv:
        return parser.parse_intermixed_args(argv)
    cut = argv.index("--")
    after = argv[cut + 1:]
    stand_ins = {f"\0{n}": word for n, word in enumerate(after)}
    args = parser.parse_intermixed_args([*argv[:cut], "--", *stand_ins])
    for name, value in vars(args).items():
        if isinstance(value, list):
            setattr(args, name, [stand_ins.get(v, v) if isinstance(v, str) else v for v in value])
        elif isinstance(value, str) and value in stand_ins:
            setattr(args, name, stand_ins[value])
    return args


def _run(argv: list[str]) -> int:
    from envcheck import engine
    from envcheck.commands import check
    from envcheck.config import load_config
    command = _command_word(argv)
    if command is None:
        parser, module = _check_parser(), None
    else:
        parser, module = _command_parser(command)
        parser.argv = argv  # type: ignore[attr-defined]
        if hasattr(module, "run"):  # a command with its own output (rules, cache): no report, no engine
            text: str = module.run(_parse(parser, argv))
            sys.stdout.write(text)
            return 0
    args = _parse(parser, argv)
    if getattr(args, "output", None) and args.output != "-" and (why := _unwritable(args.output)):
        raise UsageError(f"-o {args.output}: cannot write the report: {why}")  # before a check that may take minutes
    from envcheck.config import parse_size
    max_text = parse_size(args.max_text_size, "--max-text-size") if getattr(args, "max_text_size", None) else None
    config = _layered_config(args, load_config(args.config, Path.cwd(), max_text), max_text)
    if module is None:
        _no_mistyped_command(args.paths)
    if module is not None and hasattr(module, "report"):  # a command that compares or post-processes (diff, snapshot)
        report: Report = module.report(args, config)
    else:
        targets: list[Target] = check.build(args, config) if module is None else module.build(args, config)
        report = engine.run(targets, config, debug=args.debug)
        if module is None:  # --fix / --diff (docs/fix.md)
            from envcheck.commands import fix
            report, code = fix.after_check(args, config, report, targets, lambda: engine.run(check.build(args, config), config, debug=args.debug),
                                           lambda line: print(f"envcheck: {_clean(line)}", file=sys.stderr))
            if code is not None:
                return code
    from envcheck.formats import renderer
    fmt = args.format or "text"
    verbosity = args.verbose - args.quiet
    out = renderer(fmt)(report, verbosity)
    if args.output and args.output != "-":
        try:
            Path(args.output).write_text(out.stdout, encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"-o {args.output}: cannot write the report: {_unwritable(args.output) or exc.strerror or exc}") from exc
        if args.quiet <= 0:  # -o replaces stdout; a line on stderr says where the report went
            counted = [f"{g} {s.value}" for g, s in report.summary().items() if s.value != "SKIP"]
            errors = [f.message for f in report.findings if f.status.value == "ERROR"]  # why the exit code is 2 or 3
            print(f"envcheck: wrote the {fmt} report to {_clean(args.output)}; summary: {', '.join(counted) or 'nothing checked'}"
                  + (f"; {len(errors)} ERROR: {_clean(errors[0])}" if errors else ""), file=sys.stderr)
    else:
        sys.stdout.write(out.stdout)
    for line in out.stderr:
        print(line, file=sys.stderr)
    return report.exit_code


def _unwritable(output: str) -> str | None:
    """Why the report cannot go to ``output`` whatever it holds (a folder, a missing folder), else None."""
    where = Path(output)
    if where.is_dir():
        return "is a folder; -o takes a file"
    return None if where.parent.is_dir() else f"its folder {where.parent} does not exist"


def _layered_config(args: argparse.Namespace, config: Config, max_text_bytes: int | None) -> Config:
    """Command-line options over file and environment config (``max_text_bytes``: --max-text-size, parsed)."""
    from dataclasses import replace
    changes: dict[str, object] = {}
    if args.profile:
        changes["profile"] = args.profile
    if args.fail_on:
        changes["fail_on"] = args.fail_on
    if args.ignore:
        from envcheck.config import selector
        changes["ignores"] = {**config.ignores, **{selector(r, "--ignore"): "ignored on the command line" for r in args.ignore}}
    given: dict[str, Any] = {"nvfp4": args.nvfp4 or None, "max_text_bytes": max_text_bytes,
                             "deep_fatbin": getattr(args, "deep_fatbin", False) or None,
                             "use_cache": False if args.no_cache else None}
    changes["options"] = replace(config.options, **{k: v for k, v in given.items() if v is not None})
    return replace(config, **changes)  # type: ignore[arg-type]


# Command words of other tools (ruff check, ruff rule, trivy fs, git version) and what envcheck calls them.
_CHECK_WORDS = ("check", "lint", "scan", "fs", "validate")
_RULES_WORDS = ("explain", "rule", "list-rules")
_OTHER_TOOLS_WORDS = {"version": "`envcheck --version` prints the version", "help": "`envcheck --help` lists the options and commands"}


def _no_mistyped_command(paths: list[str]) -> None:
    """``envcheck imgae foo``: a first PATH that does not exist and is spelled like a command is a typo; a
    command word of another tool (``envcheck check .``, ``envcheck explain ID``) or a rule id is answered
    with what envcheck calls it."""
    if not paths or "/" in paths[0] or Path(paths[0]).exists():
        return
    word = paths[0]
    rest = " ".join(paths[1:3]) + (" ..." if len(paths) > 3 else "")
    if word.lower() in _CHECK_WORDS:
        say = f"checking needs no command word: `envcheck {rest or '.'}`"
    elif word.lower() in _RULES_WORDS:
        say = f"`envcheck rules {paths[1] if len(paths) > 1 else '[ID|G2]'}` explains {'it' if len(paths) > 1 else 'the rules'}"
    else:
        say = _OTHER_TOOLS_WORDS.get(word.lower(), "")
    if say:
        raise UsageError(f"{word!r} is neither a file nor an envcheck command; {say}")
    from envcheck.rules import canonical_selector
    if (named := canonical_selector(word)) is not None:
        raise UsageError(f"{word!r} is not a file; it names envcheck rules: `envcheck rules {named}` explains them")
    import difflib
    close = difflib.get_close_matches(word, list(COMMANDS), n=1, cutoff=0.6)
    if close:
        raise UsageError(f"{word!r} is neither a file nor an envcheck command; the most similar command is "
                         f"`envcheck {close[0]}` (`envcheck --help` lists them)")
