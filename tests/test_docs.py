"""The documentation (README.md and the site in docs/, `make docs`): it builds with every warning an
error, its links reach files and headings that exist, and the commands it shows are ones the course has.

- The site: Sphinx with `-W --keep-going -n`, as `make docs` runs it, so a link to a missing page or
  heading anchor fails (MyST's `myst_heading_anchors`).
- Every relative Markdown link of README.md and docs/*.md points at an existing file and, with a
  `#anchor`, at a heading of that file, slugged as MyST and GitHub slug it (Sphinx never reads README.md).
- Every `autograder ...`, `course ...` and `make ...` command line of a code block or a code span names a
  subcommand, options and option values the CLI's own argparse parser has (`autograder.cli.parser()`,
  `course.cli.parser()`, what `--help` prints), and targets the Makefile has.

Each checker is shown to catch what it claims on a made-up page. Fast: nothing imports TensorFlow.
"""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from myst_parser.config.main import MdParserConfig
from myst_parser.mdit_to_docutils.base import DocutilsRenderer
from myst_parser.parsers.mdit import create_md_parser
from myst_parser.slugs import github_slugify, unique_slug

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
SHELL_FENCES = {"", "bash", "sh", "shell", "console"}
SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)


@cache
def _markdown():
    """The Markdown parser the site reads its pages with (MyST's, on markdown-it-py)."""
    return create_md_parser(MdParserConfig(), DocutilsRenderer)


# --- the site -------------------------------------------------------------------------------------

def sphinx_build(source: Path, out: Path) -> subprocess.CompletedProcess:
    """Sphinx as `make docs` runs it (every warning an error, nitpicky), into `out`."""
    return subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-n", "-q", "-b", "html",
                           str(source), str(out)], capture_output=True, text=True, timeout=300)


def test_the_site_builds_without_a_warning(tmp_path):
    built = sphinx_build(DOCS, tmp_path / "html")
    assert built.returncode == 0, f"sphinx-build failed (`make docs` shows the same):\n{built.stderr}{built.stdout}"
    assert (tmp_path / "html" / "index.html").exists()
    pages = {path.stem for path in DOCS.glob("*.md")}
    assert pages <= {path.stem for path in (tmp_path / "html").glob("*.html")}, "a page of docs/ was not built"


def test_the_site_build_fails_on_a_link_to_a_missing_heading(tmp_path):
    """The site's own configuration turns a broken link between pages into a failed build."""
    source = tmp_path / "docs"
    source.mkdir()
    shutil.copy(DOCS / "conf.py", source / "conf.py")
    (source / "index.md").write_text("# Home\n\n```{toctree}\nother\n```\n\n[there](other.md#no-such-heading)\n")
    (source / "other.md").write_text("# Other\n\n## A heading\n")
    built = sphinx_build(source, tmp_path / "html")
    assert built.returncode != 0
    assert "no-such-heading" in built.stderr


# --- links ----------------------------------------------------------------------------------------

def slugs_of(text: str) -> frozenset[str]:
    """The anchors of a Markdown text's headings, as MyST (`compute_unique_slug`) and GitHub make them."""
    slugs: list[str] = []
    tokens = _markdown().parse(text)
    for opening, inline in zip(tokens, tokens[1:]):
        if opening.type == "heading_open":
            title = "".join(child.content for child in inline.children or [] if child.type in ("text", "code_inline"))
            slugs.append(unique_slug(github_slugify(title), slugs))
    return frozenset(slugs)


@cache
def heading_slugs(path: Path) -> frozenset[str]:
    return slugs_of(path.read_text(encoding="utf-8"))


def links(text: str) -> list[str]:
    """Every link target of a Markdown text (not those inside code)."""
    found = []
    for token in _markdown().parse(text):
        for child in token.children or []:
            if child.type == "link_open":
                found.append(str(child.attrs["href"]))
    return found


def link_problems(text: str, page: Path) -> list[str]:
    """The relative links of `text` (the page `page`) that reach no file, or no heading of it."""
    problems = []
    for href in links(text):
        if SCHEME.match(href):
            continue
        target, _, anchor = href.partition("#")
        if not target:
            if anchor not in slugs_of(text):
                problems.append(f"{page.name}: link to {href}: no heading of the page has that anchor")
            continue
        path = (page.parent / target).resolve()
        if not path.exists():
            problems.append(f"{page.name}: link to {href}: no file {target}")
        elif anchor and path.suffix == ".md" and anchor not in heading_slugs(path):
            problems.append(f"{page.name}: link to {href}: {path.name} has no heading with that anchor")
    return problems


def test_every_relative_link_reaches_a_file_and_heading():
    problems = [problem for page in PAGES for problem in link_problems(page.read_text(encoding="utf-8"), page)]
    assert not problems, "\n".join(problems)
    assert any("docs/" in href for href in links((ROOT / "README.md").read_text(encoding="utf-8"))), \
        "README.md links to no page of docs/"


def test_the_link_checker_catches_a_missing_file_and_a_missing_heading():
    page = DOCS / "made-up.md"
    text = ("[a](hub.md#no-such-heading) [b](no-such-page.md) [c](hub.md#the-course-id) [d](#here)\n\n"
            "# Here\n\n[e](https://example.org/x#y)\n")
    problems = link_problems(text, page)
    assert len(problems) == 2, problems
    assert "hub.md#no-such-heading" in problems[0] and "no-such-page.md" in problems[1]


# --- commands -------------------------------------------------------------------------------------

@dataclass
class Command:
    where: str
    words: list[str]


def _simple_commands(line: str) -> list[list[str]]:
    """A shell line's simple commands (split at `&&`, `||`, `;`, `|`), comments left out."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        words = list(lexer)
    except ValueError:  # an unclosed quote: a fragment, not a command
        return []
    commands, current = [], []
    for word in words:
        if word in ("&&", "||", ";", "|", "&"):
            commands.append(current)
            current = []
        else:
            current.append(word)
    return [*commands, current]


def commands(text: str, where: str) -> list[Command]:
    """Every `autograder`, `course` or `make` command of a Markdown text's shell code blocks and code spans,
    without `sudo`, variables set before it, or a path before the program (`.venv/bin/autograder`)."""
    lines: list[tuple[str, int]] = []
    for token in _markdown().parse(text):
        line = token.map[0] + 1 if token.map else 0
        if token.type == "fence" and token.info.strip() in SHELL_FENCES:
            joined = re.sub(r"\\\n", " ", token.content)
            lines += [(text_line.removeprefix("$ "), line) for text_line in joined.splitlines()]
        for child in token.children or []:
            if child.type == "code_inline":
                lines.append((child.content, line))
    found = []
    for text_line, line in lines:
        for words in _simple_commands(text_line):
            while words and (words[0] == "sudo" or re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", words[0])):
                words = words[1:]
            if len(words) >= 2 and Path(words[0]).name in ("autograder", "course", "make") and (
                    "/" not in words[0] or words[0].endswith(("/autograder", "/course"))):
                found.append(Command(f"{where}:{line}", [Path(words[0]).name, *words[1:]]))
    return found


@cache
def cli_parser(program: str) -> argparse.ArgumentParser:
    if program == "autograder":
        from autograder.cli import parser
    else:
        from course.cli import parser
    return parser()


def subcommands(top: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return next(action.choices for action in top._actions if isinstance(action, argparse._SubParsersAction))


@cache
def make_targets() -> frozenset[str]:
    """The Makefile's targets (rules and .PHONY), without its variables' and pattern rules' names."""
    makefile = (ROOT / "Makefile").read_text()
    targets = set()
    for match in re.finditer(r"^([^\s:#=$%][^:#=]*?)\s*::?(?!=)", makefile, re.MULTILINE):
        targets.update(match[1].split())
    return frozenset(targets - {".PHONY"})


def _placeholder(value: str) -> bool:
    return value.startswith("<") or "..." in value or value.isupper()


def option_problems(sub: argparse.ArgumentParser, words: list[str]) -> list[str]:
    """The options of `words` (a subcommand's arguments) that the subcommand lacks, or whose value is
    not one of the option's choices."""
    problems = []
    known = sub._option_string_actions
    for index, word in enumerate(words):
        if word == "--":  # what follows goes to another program (formgrade's jupyter lab)
            break
        if not word.startswith("-") or word == "-" or re.fullmatch(r"-\d[\d.]*", word):
            continue
        name, has_value, value = word.partition("=")
        action = known.get(name)
        if action is None:
            problems.append(f"no option {name}")
            continue
        if not has_value and action.nargs is None and action.const is None:
            value = words[index + 1] if index + 1 < len(words) else ""
        if action.choices and value and not _placeholder(value) and value not in action.choices:
            problems.append(f"{name} {value}: not one of {sorted(action.choices)}")
    return problems


def command_problems(command: Command) -> list[str]:
    program, *words = command.words
    if program == "make":
        unknown = [word for word in words if not word.startswith("-") and "=" not in word
                   and word not in make_targets()]
        return [f"{command.where}: `make {' '.join(words)}`: no Makefile target {word}" for word in unknown]
    top = cli_parser(program)
    if words[0].startswith("-"):
        found = option_problems(top, words)
    elif words[0] not in subcommands(top):
        found = [f"no subcommand {words[0]} (it has {', '.join(subcommands(top))})"]
    else:
        found = option_problems(subcommands(top)[words[0]], words[1:])
    return [f"{command.where}: `{' '.join(command.words)}`: {problem}" for problem in found]


def test_every_command_shown_is_one_the_clis_and_the_makefile_have():
    shown = [command for page in PAGES
             for command in commands(page.read_text(encoding="utf-8"), str(page.relative_to(ROOT)))]
    problems = [problem for command in shown for problem in command_problems(command)]
    assert not problems, "\n".join(problems)
    programs = {command.words[0] for command in shown}
    assert programs == {"autograder", "course", "make"}, f"the pages show commands of only {programs}"
    checked = {(command.words[0], command.words[1]) for command in shown}
    assert {("autograder", "grade"), ("make", "run"), ("make", "test"), ("make", "docs")} <= checked


def test_the_command_checker_catches_a_made_up_option_subcommand_value_and_target():
    text = """
```bash
.venv/bin/autograder grade 00_gpu_setup --submissions downloads \\
    --no-such-flag   # a comment --not-an-option
sudo make no-such-target HUB_SETTINGS=x
```

Then `autograder no-such-command 00_gpu_setup`, `course doctor --nope`, `autograder export 00_gpu_setup
--format blackboard --roster r.csv` and `make run && make test`; `autograder formgrade 04_xla -- --port 8890`
passes what follows `--` to jupyter lab, and `autograder grade <assignment> --profile gpu` is fine.
"""
    found = commands(text, "made-up.md")
    assert len(found) == 9, [command.words for command in found]
    problems = [problem for command in found for problem in command_problems(command)]
    assert len(problems) == 5, "\n".join(problems)
    for expected in ("no option --no-such-flag", "no Makefile target no-such-target", "no subcommand no-such-command",
                     "no option --nope", "--format blackboard: not one of"):
        assert any(expected in problem for problem in problems), (expected, problems)
