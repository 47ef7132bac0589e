"""Issue 13 section 4: malformed input gives a typed error naming where and what to fix."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import tokenpact as tp
from tokenpact.chat import MessageContentError, SequenceCompiler, truncate
from tokenpact.cli.main import cli
from tokenpact.errors import ArtifactError, InvalidInputError

from .hostile import byte_level_bpe, wordpiece, write_json

runner = CliRunner()


@pytest.mark.parametrize(
    "edit,where",
    [
        (lambda d: d.update(model=None), r"\$\.model"),
        (lambda d: d["model"]["vocab"].update(x="7"), r"\$\.model\.vocab\['x'\]"),
        (lambda d: d["model"]["vocab"].update(x=-1), r"\$\.model\.vocab\['x'\]"),
        (lambda d: d["model"]["vocab"].update(x=2**64), r"\$\.model\.vocab\['x'\]"),
        (lambda d: d["model"].update(vocab=[1, 2]), r"\$\.model\.vocab"),
        (lambda d: d["model"].update(merges=[["a"]]), r"\$\.model\.merges\[0\]"),
        (lambda d: d["model"].update(merges={"a": "b"}), r"\$\.model\.merges"),
        (lambda d: d["model"].update(dropout="high"), r"\$\.model\.dropout"),
        (lambda d: d.update(pre_tokenizer=[1]), r"\$\.pre_tokenizer"),
        (lambda d: d["pre_tokenizer"].update(add_prefix_space=7), r"add_prefix_space"),
        (lambda d: d.update(normalizer={"type": "Sequence", "normalizers": 5}), "normalizers"),
        (lambda d: d.update(decoder={"type": "Strip", "start": "x"}), r"\$\.decoder\.start"),
        (lambda d: d.update(added_tokens=[{"id": 1.5, "content": "x"}]), r"added_tokens\[0\]\.id"),
        (lambda d: d.update(added_tokens=[{"id": 300, "content": 5}]), "content"),
        (lambda d: d.update(added_tokens={"a": 1}), r"\$\.added_tokens"),
        (lambda d: d.update(padding=3), r"\$\.padding"),
        (lambda d: d.update(post_processor={"type": "BertProcessing", "sep": [1, "x"]}), "sep"),
        (
            lambda d: d.update(
                post_processor={"type": "TemplateProcessing", "single": [{"Nope": {}}]}
            ),
            r"single\[0\]",
        ),
        (
            lambda d: d.update(
                normalizer={"type": "Sequence", "normalizers": [{"type": "Sequence"}] * 0}
                | {"normalizers": [_deep(40)]}
            ),
            "nested deeper",
        ),
    ],
)
def test_malformed_tokenizer_json_names_the_json_path(
    tmp_path: Path, edit: Any, where: str
) -> None:
    data = copy.deepcopy(byte_level_bpe())
    edit(data)
    with pytest.raises(ArtifactError, match=where):
        tp.Tokenizer.load(write_json(tmp_path / "tokenizer.json", data))


def _deep(depth: int) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "NFC"}
    for _ in range(depth):
        node = {"type": "Sequence", "normalizers": [node]}
    return node


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000, "null", "[]", '"x"'])
def test_tokenizer_json_that_is_not_an_object(tmp_path: Path, text: str) -> None:
    path = tmp_path / "tokenizer.json"
    path.write_text(text)
    with pytest.raises(ArtifactError):
        tp.Tokenizer.load(path)


def test_post_processor_naming_an_unknown_token_is_rejected_at_load(tmp_path: Path) -> None:
    data = wordpiece()
    data["post_processor"] = {
        "type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "[BOS]", "type_id": 0}}, {"Sequence": {"id": "A"}}],
        "pair": [],
        "special_tokens": {"[BOS]": {"id": "[BOS]", "ids": [9], "tokens": ["[BOS]"]}},
    }
    with pytest.raises(ArtifactError, match=r"post_processor\.single.*'\[BOS\]'"):
        tp.Tokenizer.load(write_json(tmp_path / "tokenizer.json", data))


@pytest.fixture()
def compiler() -> SequenceCompiler:
    tok = tp.Tokenizer.from_merges([], special_tokens=tp.chat.SEED_SPECIAL_TOKENS)
    return SequenceCompiler(tok)


def test_truncate_one_message_conversation(compiler: SequenceCompiler) -> None:
    result = truncate(compiler, [{"role": "user", "content": "hello"}], limit=100)
    assert result.kept_indices == (0,) and result.dropped == ()


@pytest.mark.parametrize(
    "messages",
    [
        [{"role": "user", "content": 5}],
        [{"role": "user", "content": ["a"]}],
        [{"role": "user", "content": "bad \ud800 surrogate"}],
        [{"role": 3, "content": "x"}],
        [{"role": "assistant", "tool_calls": 7}],
        [{"role": "assistant", "tool_calls": [{"id": "c", "function": "f"}]}],
        "hello",
        {"role": "user", "content": "x"},
        42,
    ],
)
def test_bad_messages_are_invalid_input(compiler: SequenceCompiler, messages: Any) -> None:
    with pytest.raises(InvalidInputError):
        compiler.format(messages, mode="generation")


def test_hf_template_rejects_surrogates_and_non_lists() -> None:
    tok = tp.Tokenizer.from_merges([], special_tokens=tp.chat.SEED_SPECIAL_TOKENS)
    template = tp.chat.ChatTemplate("{{ messages[0]['content'] }}", tok)
    with pytest.raises(MessageContentError):
        template.render([{"role": "user", "content": "x\udc00"}])
    with pytest.raises(MessageContentError):
        template.render("hello")  # type: ignore[arg-type]


def test_cli_bad_output_path_is_a_clean_error(tmp_path: Path) -> None:
    source = write_json(tmp_path / "tokenizer.json", wordpiece())
    (tmp_path / "blocker").write_text("a file, not a directory")
    target = tmp_path / "blocker" / "sub" / "out.json"
    result = runner.invoke(cli, ["convert", str(source), str(target), "--to", "hf"])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output and "error:" in result.output


@pytest.mark.parametrize(
    "argv",
    [
        ["encode", "-t", "{missing}", "hi"],
        ["verify", "{missing}"],
        ["hash", "{missing}"],
        ["inspect", "-t", "{missing}", "hi"],
        ["encode", "-t", "{art}", "--file", "{missing}"],
    ],
)
def test_a_missing_file_exits_1_everywhere(tmp_path: Path, argv: list[str]) -> None:
    art = tp.Tokenizer.from_merges([(104, 101)]).save(tmp_path / "art")
    missing = tmp_path / "nope.model"
    args = [a.format(missing=missing, art=art) for a in argv]
    result = runner.invoke(cli, args)
    assert result.exit_code == 1, result.output
    assert "does not exist" in result.output or "cannot read" in result.output


def test_mistyped_model_path_names_the_path() -> None:
    with pytest.raises(ArtifactError, match=r"tokenizr\.model does not exist"):
        tp.Tokenizer.load("no/such/tokenizr.model")


def test_deep_or_cyclic_message_content_is_invalid_input() -> None:
    tok = tp.Tokenizer.from_merges([], special_tokens=tp.chat.SEED_SPECIAL_TOKENS)
    template = tp.chat.ChatTemplate("{{ messages[0]['content'] | tojson }}", tok)
    cyclic: list[object] = []
    cyclic.append(cyclic)
    deep: object = "x"
    for _ in range(5000):
        deep = [deep]
    for content in (cyclic, deep):
        with pytest.raises(MessageContentError, match="nests deeper"):
            template.render([{"role": "user", "content": content}])


def test_nul_in_a_command_line_argument_is_a_usage_error(tmp_path: Path) -> None:
    result = runner.invoke(cli, ["encode", "-t", "a\x00b", "hi"])
    assert result.exit_code == 2 and "NUL" in result.output
