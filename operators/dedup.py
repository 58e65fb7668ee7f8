"""Deduplication and decontamination of problem sets.

- exact: the same program once comments, docstrings and formatting are gone;
- structural: the same torch.export graph (ops and shapes), whatever the names and weights;
- decontamination against a benchmark (a KernelBench checkout): structural matches, and n-gram
  overlap of normalised source above a threshold. Every drop is reported with its reason and match.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from schemas.records import Problem, content_hash
from verifier.analysis import AnalysisError, ReferenceAnalyser, export_analysis

_TOKEN = re.compile(r"[A-Za-z_]\w*|\d+(?:\.\d+)?|\S")


def normalized_source(source: str) -> str:
    """The program without comments, docstrings and formatting (ast round trip)."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]
    return ast.unparse(tree)


def graph_signature(problem: Problem, analyser: ReferenceAnalyser | None = None) -> str | None:
    """Structural signature for dedup: torch.export's ops, shapes and returned values (fake tensors; an
    imported problem's in a sandbox) and how `get_inputs` builds the inputs; None if it cannot be exported.
    Problems whose outputs or input construction differ (an LSTM returning h or c; a matmul of symmetric
    matrices) are different problems."""
    try:
        signature = export_analysis(problem, analyser)["signature"]
    except AnalysisError:
        return None
    return content_hash(signature, inputs_construction(problem.reference, sizes=True))


def contamination_pattern(problem: Problem, analyser: ReferenceAnalyser | None = None) -> str | None:
    """Name- and size-agnostic signature for decontamination: the dataflow of ops (operands, non-size
    arguments, returned values) and the shape of `get_inputs`' construction with its numbers left out, so a
    renamed-and-resized copy of a benchmark problem matches it; None if it cannot be exported."""
    try:
        pattern = export_analysis(problem, analyser)["pattern"]
    except AnalysisError:
        return None
    return structure_pattern(pattern, problem.reference)


def structure_pattern(dataflow: str, reference: str) -> str:
    """The size- and name-agnostic signature of a reference from its exported dataflow pattern
    (operators/graph.dataflow_pattern) and its source's `get_inputs` construction, numbers left out."""
    return content_hash(dataflow, inputs_construction(reference, sizes=False))


def inputs_construction(source: str, sizes: bool) -> str:
    """`get_inputs` as the calls and operators that build its tensors: names replaced by their order of
    appearance, numbers kept only when `sizes` (module-level size constants are names, so they drop out too)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return ""
    func = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "get_inputs"), None)
    if func is None:
        return ""
    names: dict[str, str] = {}
    attributes = {"torch", "nn", "F", "math", "np"}

    class Normalise(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            if node.id not in attributes:
                node.id = names.setdefault(node.id, f"v{len(names)}")
            return node

        def visit_Constant(self, node: ast.Constant) -> ast.AST:
            if isinstance(node.value, (int, float)) and not isinstance(node.value, bool) and not sizes:
                return ast.Constant(value=0)
            return node

        def visit_arg(self, node: ast.arg) -> ast.AST:
            node.arg = names.setdefault(node.arg, f"v{len(names)}")
            return node

    body = Normalise().visit(ast.Module(body=func.body, type_ignores=[]))
    return ast.unparse(body)


def ngrams(source: str, n: int) -> set[str]:
    tokens = _TOKEN.findall(normalized_source(source))
    return {" ".join(tokens[i:i + n]) for i in range(max(0, len(tokens) - n + 1))}


@dataclass
class Drop:
    problem_id: str
    name: str
    reason: str  # exact | structure | ngram
    matched: str
    score: float = 1.0


@dataclass
class CleanReport:
    kept: int = 0
    dropped: list[Drop] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for d in self.dropped:
            out[d.reason] = out.get(d.reason, 0) + 1
        return out


def deduplicate(problems: list[Problem], structural: bool = True,
                analyser: ReferenceAnalyser | None = None) -> tuple[list[Problem], CleanReport]:
    """First occurrence wins; later exact or structural duplicates are dropped and reported. Imported
    problems are analysed by `analyser` (sandboxes); without one they get no structural signature."""
    report = CleanReport()
    kept: list[Problem] = []
    seen_exact: dict[str, str] = {}
    seen_graph: dict[str, str] = {}
    for p in problems:
        exact = content_hash(normalized_source(p.reference))
        if exact in seen_exact:
            report.dropped.append(Drop(p.id, p.name, "exact", seen_exact[exact]))
            continue
        signature = graph_signature(p, analyser) if structural else None
        if signature and signature in seen_graph:
            report.dropped.append(Drop(p.id, p.name, "structure", seen_graph[signature]))
            continue
        seen_exact[exact] = p.name or p.id
        if signature:
            seen_graph[signature] = p.name or p.id
        kept.append(p)
    report.kept = len(kept)
    return kept, report


def decontaminate(problems: list[Problem], benchmark: list[Problem], ngram_n: int = 13,
                  max_overlap: float = 0.5, structural: bool = True,
                  analyser: ReferenceAnalyser | None = None) -> tuple[list[Problem], CleanReport]:
    """Drop problems that match a benchmark problem's dataflow whatever their names and sizes
    (`contamination_pattern`), or share more than `max_overlap` of their n-grams with one."""
    report = CleanReport()
    bench_graph = {}
    if structural:
        for b in benchmark:
            sig = contamination_pattern(b, analyser)
            if sig:
                bench_graph.setdefault(sig, b.name or b.id)
    owners: dict[str, set[int]] = {}
    bench_ngrams = []
    for i, b in enumerate(benchmark):
        grams = ngrams(b.reference, ngram_n)
        bench_ngrams.append(grams)
        for g in grams:
            owners.setdefault(g, set()).add(i)
    kept = []
    for p in problems:
        sig = contamination_pattern(p, analyser) if structural else None
        if sig and sig in bench_graph:
            report.dropped.append(Drop(p.id, p.name, "structure", bench_graph[sig]))
            continue
        grams = ngrams(p.reference, ngram_n)
        if grams:
            hits: dict[int, int] = {}
            for g in grams:
                for i in owners.get(g, ()):
                    hits[i] = hits.get(i, 0) + 1
            if hits:
                best, count = max(hits.items(), key=lambda kv: kv[1])
                overlap = count / len(grams)
                if overlap > max_overlap:
                    report.dropped.append(Drop(p.id, p.name, "ngram", benchmark[best].name or benchmark[best].id,
                                               round(overlap, 3)))
                    continue
        kept.append(p)
    report.kept = len(kept)
    return kept, report
