"""An edit written into the source of the call that builds the training loader, with a
concrete-syntax rewrite (libcst): the file's comments, layout and quoting stay as they were; the
call's arguments are changed in place (a keyword's value, a positional argument's value, or a
keyword added in the call's own style), and a fixes-library name the edit uses is imported.
A call fastload cannot change safely raises ``Unpatchable`` with the reason. Pure."""

from __future__ import annotations

from typing import Any

from fastload_cli.patching.edits import REMOVED, Edit

# DataLoader's parameters in the order positional arguments fill them (the rest are keyword-only).
POSITIONAL = (
    "dataset",
    "batch_size",
    "shuffle",
    "sampler",
    "batch_sampler",
    "num_workers",
    "collate_fn",
    "pin_memory",
    "drop_last",
    "timeout",
    "worker_init_fn",
    "multiprocessing_context",
    "generator",
)
LIBRARY = "fastload_cli.fixes"


class Unpatchable(Exception):
    """The call cannot be changed safely; the message says why."""


def rewrite(source: str, line: int, class_name: str, edit: Edit) -> str:
    """``source`` with ``edit`` made to the call of ``class_name`` on ``line``."""
    import libcst as cst
    from libcst.metadata import MetadataWrapper

    try:
        wrapper = MetadataWrapper(cst.parse_module(source))
    except cst.ParserSyntaxError as exc:
        raise Unpatchable(f"its source does not parse here: {exc.message}") from None
    finder = _CallAt(line, class_name)
    wrapper.visit(finder)
    if finder.found is None:
        raise Unpatchable(f"no call of {class_name} was found on line {line}")
    call = _changed(finder.found, edit, class_name)
    if edit.wrapper is not None:
        call = cst.Call(func=cst.Name(edit.wrapper), args=[cst.Arg(call)])
    module = wrapper.module.deep_replace(finder.found, call)
    names = [n for n in (edit.wrapper, "WorkerThreads" if edit.worker_threads is not None else None) if n]
    return _imported(module, names).code


def _callee(call: Any) -> str | None:
    import libcst as cst

    if isinstance(call.func, cst.Name):
        return call.func.value
    if isinstance(call.func, cst.Attribute):
        return call.func.attr.value
    return None


def _CallAt(line: int, class_name: str) -> Any:  # a class built on first use: libcst is imported lazily
    import libcst as cst
    from libcst.metadata import PositionProvider

    class CallAt(cst.CSTVisitor):
        """The innermost call of ``class_name`` whose lines hold ``line``."""

        METADATA_DEPENDENCIES = (PositionProvider,)

        def __init__(self) -> None:
            super().__init__()
            self.found: cst.Call | None = None

        def visit_Call(self, node: cst.Call) -> None:
            where = self.get_metadata(PositionProvider, node)
            if where.start.line <= line <= where.end.line and _callee(node) == class_name:
                self.found = node  # calls nested in it are visited after it: the innermost is kept

    return CallAt()


def _changed(call: Any, edit: Edit, class_name: str) -> Any:
    import libcst as cst

    args = list(call.args)
    for name, value in edit.settings:
        args = _set(args, name, None if value == REMOVED else cst.parse_expression(repr(value)), class_name)
    if edit.worker_threads is not None:
        own = _given(args, "worker_init_fn", class_name)
        then = f", then={cst.Module([]).code_for_node(own.value)}" if own is not None else ""
        threads = cst.parse_expression(f"WorkerThreads({edit.worker_threads}{then})")
        args = _set(args, "worker_init_fn", threads, class_name)
    return call.with_changes(args=_punctuated(list(call.args), args))


def _given(args: list[Any], name: str, class_name: str) -> Any:
    """The argument that gives ``name``: by keyword, or (DataLoader's own) by position; or None."""
    for arg in args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    if class_name == "DataLoader" and name in POSITIONAL:
        positional = [a for a in args if a.keyword is None and not a.star]
        position = POSITIONAL.index(name)
        if position < len(positional):
            return positional[position]
    return None


def _set(args: list[Any], name: str, value: Any, class_name: str) -> list[Any]:
    """``args`` with ``name`` given ``value`` (None: taken out, where it is given by keyword)."""
    import libcst as cst

    own = _given(args, name, class_name)
    if own is not None:
        if value is None:
            return [a for a in args if a is not own] if own.keyword is not None else args
        return [a.with_changes(value=value) if a is own else a for a in args]
    if value is None:
        return args
    starred = next((a.star for a in args if a.star), None)
    if starred:
        raise Unpatchable(f"its arguments come in through {starred}: fastload cannot tell whether {name} is among them")
    equal = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))
    return [*args, cst.Arg(keyword=cst.Name(name), value=value, equal=equal)]


def _punctuated(before: list[Any], after: list[Any]) -> list[Any]:
    """``after``'s commas in the call's own style: an argument added, or one that no longer ends
    the call, is separated as the call separates its others; the call's end keeps its trailing
    comma (or none); a comment stays with the argument it follows."""
    if not after:
        return after
    last = _key(before, len(before) - 1) if before else None
    between = _clean(next((a.comma for a in before[:-1] if _is_comma(a.comma)), None))
    found = []
    for i, arg in enumerate(after):
        key = _key(after, i)
        was_last, ends = key == last, i == len(after) - 1
        if ends:
            comma = arg.comma if was_last else _clean(before[-1].comma, keep_default=True)
        elif was_last or key not in {_key(before, j) for j in range(len(before))}:
            comma = _separator(arg.comma, between) if was_last else between
        else:
            comma = arg.comma
        found.append(arg.with_changes(comma=comma))
    return found


def _key(args: list[Any], i: int) -> tuple[str, object]:
    """An argument's identity across the edit: its keyword, or its place among the positional ones."""
    arg = args[i]
    if arg.keyword is not None:
        return ("keyword", arg.keyword.value)
    return ("position", sum(1 for a in args[:i] if a.keyword is None))


def _is_comma(comma: Any) -> bool:
    import libcst as cst

    return isinstance(comma, cst.Comma)


def _clean(comma: Any, keep_default: bool = False) -> Any:
    """A comma's whitespace without the comment on its line (that comment is its argument's)."""
    import libcst as cst

    if not _is_comma(comma):
        return comma if keep_default else cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    after = comma.whitespace_after
    if isinstance(after, cst.ParenthesizedWhitespace):
        after = after.with_changes(first_line=cst.TrailingWhitespace(newline=after.first_line.newline), empty_lines=())
    return comma.with_changes(whitespace_after=after)


def _separator(own: Any, between: Any) -> Any:
    """The comma after the argument that ended the call and no longer does: its own comment kept,
    the next line indented as the call's arguments are."""
    import libcst as cst

    if not _is_comma(own) or not isinstance(own.whitespace_after, cst.ParenthesizedWhitespace):
        return between
    step = between.whitespace_after
    if not isinstance(step, cst.ParenthesizedWhitespace):
        return between
    return own.with_changes(
        whitespace_after=own.whitespace_after.with_changes(indent=step.indent, last_line=step.last_line)
    )


def _imported(module: Any, names: list[str]) -> Any:
    """``module`` importing each of ``names`` from the fixes library (once)."""
    if not names:
        return module
    from libcst.codemod import CodemodContext
    from libcst.codemod.visitors import AddImportsVisitor

    context = CodemodContext()
    for name in names:
        AddImportsVisitor.add_needed_import(context, LIBRARY, name)
    return AddImportsVisitor(context).transform_module(module)
