"""A mistake on the command line or in the configuration file is one bounded line and exit status 2:
near-misses of an option name get the option meant, files built to exhaust the parser are refused."""

from __future__ import annotations

import pytest

from pipelines.check import main as check_main
from pipelines.config import MAX_CONFIG_DEPTH, ConfigError, load_config
from pipelines.parse import main as parse_main
from pipelines.rechunk import main
from tests.conftest import REPO

SAMPLE = str(REPO / "sample" / "docs.parquet")


@pytest.mark.parametrize(
    ("given", "meant"),
    [("--max-token", "--max-tokens"), ("--maxtokens", "--max-tokens"), ("--max_token=5", "--max-tokens"),
     ("--colum-map", "--column-map"), ("--runer", "--runner")],
)  # fmt: skip
def test_a_near_miss_of_an_option_is_refused_with_the_option_meant(tmp_path, capsys, given, meant):
    argv = ["--input", SAMPLE, "--output", str(tmp_path / "out"), given, *([] if "=" in given else ["5"])]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert (
        err == f"rechunk: error: unrecognized option {given.split('=')[0]} (did you mean {meant}? see rechunk --help)\n"
    )
    assert not (tmp_path / "out").exists()


def test_an_accepted_spelling_of_an_option_is_no_near_miss(tmp_path):
    argv = ["--input", SAMPLE, "--output", str(tmp_path / "out"), "--max_tokens", "256"]
    assert main(argv) == 0


def test_parse_and_check_refuse_near_misses_in_one_line(tmp_path, capsys):
    assert parse_main(["--input", "x", "--output", str(tmp_path / "o"), "--max-file-byte", "5"]) == 2
    assert capsys.readouterr().err == (
        "rechunk parse: error: unrecognized option --max-file-byte (did you mean --max-file-bytes? "
        "see rechunk parse --help)\n"
    )
    assert check_main(["--input", "x", "--output", "y", "--tokenizer-jsn", "z"]) == 2
    assert capsys.readouterr().err == (
        "rechunk check: error: unrecognized option --tokenizer-jsn (did you mean --tokenizer-json? "
        "see rechunk check --help)\n"
    )


@pytest.mark.parametrize("command", [[], ["parse"], ["check"]])
def test_version_is_printed_before_anything_else(capsys, command):
    from importlib import metadata

    assert main([*command, "--version", "--no-such-option"]) == 0
    assert capsys.readouterr().out == f"rechunk {metadata.version('rechunk')}\n"


def test_check_of_an_output_that_is_no_run_is_one_line_and_exit_1(tmp_path, capsys):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "report.json").write_text("{not json")
    assert check_main(["--input", SAMPLE, "--output", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("rechunk check: error: ") and len(err.splitlines()) == 1


def _nested_yaml(levels: int) -> str:
    return "a: " + "[" * levels + "]" * levels + "\n"


def _aliases(levels: int) -> str:
    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join([*lines, f"chunkers: *l{levels - 1}"]) + "\n"


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("deep.yaml", _nested_yaml(5000), f"nested deeper than {MAX_CONFIG_DEPTH} levels"),
        ("deep.yaml", "".join("  " * i + "k:\n" for i in range(200)) + "  " * 200 + "v: 1\n", "nested deeper"),
        ("deep.json", '{"a": ' + "[" * 5000 + "]" * 5000 + "}", f"nested deeper than {MAX_CONFIG_DEPTH} levels"),
        ("laughs.yaml", _aliases(9), "its aliases expand to more than 100,000 values"),
        ("laughs.yaml", _aliases(12), "its aliases expand to more than 100,000 values"),
        ("big.yaml", "# a comment\n" * 100_000, "larger than 1,048,576 bytes"),
    ],
)
def test_a_configuration_built_to_exhaust_the_parser_is_refused(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ConfigError, match=message) as info:
        load_config(str(path))
    assert len(str(info.value)) < 300


def test_a_nested_alias_bomb_is_one_short_line_and_exit_2(tmp_path, capsys):
    path = tmp_path / "laughs.yaml"
    path.write_text(_aliases(12))
    assert main(["--input", SAMPLE, "--output", str(tmp_path / "out"), "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and len(err) < 300


def test_a_configuration_at_the_depth_limit_is_read():
    text = "a: " + "[" * (MAX_CONFIG_DEPTH - 1) + "]" * (MAX_CONFIG_DEPTH - 1) + "\n"
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(text)
    assert "a" in load_config(f.name)
