"""One grammar for every subcommand: help with defaults and an example, -o/--output for a
file, --out-dir for a folder, --method for an embedding method, --seed >= 0, and the old
spellings still accepted for one release with a warning."""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

import numpy as np
import pytest

from kernelne.cli.app import build_parser, main

ROOT = Path(__file__).resolve().parents[2]
KARATE = ROOT / "examples" / "karate.edgelist"

COMMANDS = [("embed",), ("update",), ("convert",), ("demo",), ("evaluate",),
            ("evaluate", "classify"), ("evaluate", "linkpred"), ("evaluate", "heuristics"),
            ("split",), ("reproduce",), ("plot",), ("datasets",), ("generate",), ("tune",),
            ("docs",)]
FILE_WRITERS = [("embed",), ("update",), ("convert",), ("generate",), ("plot",), ("tune",),
                ("evaluate", "classify"), ("evaluate", "linkpred"), ("evaluate", "heuristics")]
FOLDER_WRITERS = [("split",), ("reproduce",)]
SEEDED = [["embed", "g.txt", "-o", "e.npy"], ["update", "m.npz", "g.txt", "-o", "e.npy"],
          ["demo"], ["split", "g.txt", "--out-dir", "s"], ["evaluate", "classify", "e.npy",
          "l.txt"], ["plot", "e.npy", "-o", "m.png"], ["generate", "30", "60", "2", "0.3",
          "-o", "g"]]


def _subparser(path: tuple[str, ...]) -> argparse.ArgumentParser:
    parser = build_parser()
    for name in path:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[name]
    return parser


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_help_ends_with_a_runnable_example(path, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([*path, "--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out.rstrip()
    example = text[text.rindex("\nexample:\n") + len("\nexample:\n"):]
    lines = [line.strip() for line in example.splitlines()]
    assert lines and lines[-1].startswith("kernelne ")
    data = "/data"
    for line in lines:  # every kernelne line is a command line the parser accepts; any
        if not line.startswith("kernelne "):  # other writes a file the next lines read
            assert re.fullmatch(r"awk '[^']+' \S+ > \S+(\s+#.*)?", line), line
            continue
        argv = shlex.split(line.replace("$(kernelne datasets --path)", data))[1:]
        build_parser().parse_args(argv)
    assert " ".join(path) in " ".join(lines)


@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_help_shows_every_default_and_writes_none_by_hand(path):
    parser = _subparser(path)
    text = _flat(parser.format_help())
    for action in parser._actions:
        if action.help is argparse.SUPPRESS:
            continue
        assert not re.search(r"\(default \d|\(\d[\d.e-]*\)", action.help or ""), action.dest
        default = action.default
        if default in (None, False, argparse.SUPPRESS) or not action.option_strings:
            continue
        if "%(default)" in (action.help or ""):
            continue
        assert _flat(f"(default: {default})") in text, action.dest


def test_top_level_help_lists_a_first_command(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "first commands:" in out and "kernelne datasets --copy karate" in out
    assert "kernelne embed karate.edgelist" in out  # the file the line before writes


@pytest.mark.parametrize("path", FILE_WRITERS, ids=" ".join)
def test_a_written_file_is_named_by_o_output(path):
    options = {tuple(a.option_strings) for a in _subparser(path)._actions}
    assert ("-o", "--output") in options


@pytest.mark.parametrize("path", FOLDER_WRITERS, ids=" ".join)
def test_a_written_folder_is_named_by_out_dir(path):
    visible = {s for a in _subparser(path)._actions if a.help is not argparse.SUPPRESS
               for s in a.option_strings}
    assert "--out-dir" in visible and "-o" not in visible and "--output" not in visible


@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_method_names_an_embedding_method_only(path):
    for action in _subparser(path)._actions:
        if "--method" in action.option_strings and action.help is not argparse.SUPPRESS:
            assert path in [("embed",), ("tune",)] and "deepwalk" in action.choices


@pytest.mark.parametrize("argv", SEEDED, ids=lambda argv: argv[0])
def test_a_negative_seed_is_refused_while_parsing(argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args([*argv, "--seed", "-1"])
    assert exit_.value.code == 2
    assert "argument --seed: -1: a seed is a whole number >= 0" in capsys.readouterr().err


@pytest.mark.parametrize("argv, dest, value, old", [
    (["split", "g.txt", "-o", "s"], "out_dir", "s", "-o"),
    (["split", "g.txt", "--output", "s"], "out_dir", "s", "--output"),
    (["reproduce", "--out", "r"], "out_dir", "r", "--out"),
    (["plot", "e.npy", "-o", "m.png", "--method", "tsne"], "projection", "tsne", "--method"),
    (["evaluate", "classify", "e.npy", "l.txt", "--method", "mine"], "name", "mine",
     "--method"),
    (["evaluate", "linkpred", "e.npy", "s", "--method", "mine"], "name", "mine", "--method"),
])
def test_deprecated_option_spellings_still_work_and_warn(argv, dest, value, old, capsys):
    args = build_parser().parse_args(argv)
    assert getattr(args, dest) == value
    err = capsys.readouterr().err
    assert f"kernelne: warning: {old} is deprecated" in err and "removed in" in err


def test_new_spellings_do_not_warn(capsys):
    args = build_parser().parse_args(["plot", "e.npy", "-o", "m.png", "--projection", "tsne"])
    assert args.projection == "tsne" and capsys.readouterr().err == ""


def test_split_refuses_both_folder_spellings(capsys):
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["split", "g.txt", "--out-dir", "a", "-o", "b"])
    assert exit_.value.code == 2
    assert "not allowed with argument --out-dir" in capsys.readouterr().err


def test_convert_positional_output_still_works_and_warns(tmp_path, capsys):
    out = tmp_path / "k.npz"
    assert main(["convert", str(KARATE), str(out)]) == 0
    assert out.is_file() and "deprecated" in capsys.readouterr().err
    assert main(["convert", str(KARATE), "-o", str(tmp_path / "k2.npz")]) == 0
    assert "deprecated" not in capsys.readouterr().err


def test_convert_needs_an_output(tmp_path, capsys):
    assert main(["convert", str(KARATE)]) == 2
    assert "kernelne: error: convert needs the output file: -o/--output" in capsys.readouterr().err
    assert main(["convert", str(KARATE), str(tmp_path / "a.npz"), "-o",
                 str(tmp_path / "b.npz")]) == 2
    assert not list(tmp_path.iterdir())


def test_generate_positional_prefix_still_works_and_warns(tmp_path, capsys):
    assert main(["generate", "60", "200", "3", "0.3", str(tmp_path / "old")]) == 0
    assert (tmp_path / "old.edges").is_file() and "deprecated" in capsys.readouterr().err
    assert main(["generate", "60", "200", "3", "0.3", "-o", str(tmp_path / "new")]) == 0
    assert (tmp_path / "new.labels").is_file() and "deprecated" not in capsys.readouterr().err
    assert main(["generate", "60", "200", "3", "0.3"]) == 2
    assert "-o/--output PREFIX" in capsys.readouterr().err


def test_the_update_example_grows_the_graph(tmp_path, monkeypatch, capsys):
    """``kernelne update --help``'s example, line by line in an empty folder (as
    .ci/help_examples.py runs it): the model is fitted on part of karate and updated with the
    whole club, so the update embeds new nodes."""
    import subprocess

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("KERNELNE_DATA", raising=False)
    example = _subparser(("update",)).epilog.split("example:\n", 1)[1]
    for line in (line.strip() for line in example.splitlines()):
        if line.startswith("kernelne "):
            assert main(shlex.split(line, comments=True)[1:]) == 0, line
        else:
            subprocess.run(["bash", "-c", line], cwd=tmp_path, check=True)
    summary = capsys.readouterr().out
    new = int(re.search(r"nodes +([\d,]+) new", summary).group(1))
    assert new >= 4  # nodes 30-33 at least
    assert np.load(tmp_path / "karate.npy").shape[0] == 34
