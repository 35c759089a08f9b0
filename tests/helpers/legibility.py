"""How plain kinspect's code is, measured the way issue 50 states its targets.

radon's cyclomatic complexity per block (function, method or class), and an AST count over
`kinspect/`: conditional expressions and `and`/`or` operators per 1,000 non-blank lines, and the
annotations spelled `dict[str, Any]`. `python -m tests.helpers.legibility` prints the table and the
blocks over the cap; tests/test_legibility.py holds the ceilings, lowered as the code gets
plainer (a ratchet: it fails when the code gets denser again).
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

from radon.complexity import cc_visit

PACKAGE = Path(__file__).resolve().parents[2] / "kinspect"


@dataclass(frozen=True)
class Block:
    """One function, method or class radon scored."""

    where: str
    complexity: int


@dataclass(frozen=True)
class Legibility:
    lines: int
    conditional_expressions: int
    boolean_operators: int
    dict_str_any: int
    blocks: tuple[Block, ...]

    def per_kloc(self, count: int) -> float:
        return round(count * 1000 / self.lines, 1)

    def blocks_at_least(self, complexity: int) -> tuple[Block, ...]:
        return tuple(b for b in self.blocks if b.complexity >= complexity)


def _sources(root: Path) -> list[Path]:
    return sorted(root.rglob("*.py"))


def _blocks(where: str, text: str) -> list[Block]:
    """Each function, method, class and closure radon scores, named by file, line and name."""
    found = []
    for block in cc_visit(text):
        found.append(Block(f"{where}:{block.lineno} {block.fullname}", block.complexity))
        for closure in getattr(block, "closures", []):
            found.append(Block(f"{where}:{closure.lineno} {closure.fullname}",
                               closure.complexity))
    return found


def _boolean_operators(tree: ast.AST) -> int:
    """Each `and`/`or` written: `a and b and c` is two."""
    return sum(len(node.values) - 1 for node in ast.walk(tree) if isinstance(node, ast.BoolOp))


def measure(root: Path = PACKAGE) -> Legibility:
    lines = conditionals = operators = dict_any = 0
    blocks: list[Block] = []
    for path in _sources(root):
        text = path.read_text()
        tree = ast.parse(text)
        lines += sum(1 for line in text.splitlines() if line.strip())
        conditionals += sum(isinstance(node, ast.IfExp) for node in ast.walk(tree))
        operators += _boolean_operators(tree)
        dict_any += text.count("dict[str, Any]")
        blocks.extend(_blocks(path.relative_to(root.parent).as_posix(), text))
    return Legibility(lines, conditionals, operators, dict_any, tuple(blocks))


def main() -> int:
    found = measure()
    print(f"non-blank lines                     {found.lines}")
    print(f"conditional expressions per 1,000   {found.per_kloc(found.conditional_expressions)}"
          f"  ({found.conditional_expressions})")
    print(f"and/or per 1,000                    {found.per_kloc(found.boolean_operators)}"
          f"  ({found.boolean_operators})")
    print(f"dict[str, Any]                      {found.dict_str_any}")
    print(f"blocks of complexity >= 13          {len(found.blocks_at_least(13))}")
    print(f"blocks of complexity >= 21          {len(found.blocks_at_least(21))}")
    for block in sorted(found.blocks_at_least(13), key=lambda b: -b.complexity):
        print(f"  {block.complexity:3d}  {block.where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
