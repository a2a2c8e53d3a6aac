"""Symbolic dims: expressions over named dynamic dims, hash-consed and simplified (pure Python).

A dynamic dim is a symbol (`batch`, `seq`: an ONNX dim_param, or a fresh name). Shape functions
build every other dim from symbols and integers:

    h = sym("h")
    out = floordiv(h - 3, 2) + 1            # prints (h-3)/2+1
    bcast(sym("batch"), sym("batch"))       # batch: broadcasting a dim with itself is that dim
    floordiv(sym("batch") * sym("seq") * 512, const(8 * 64))   # batch*seq (exact division)

Every expression is interned: structurally equal expressions are the same object (compare with
`is`), built once from their parts, so the work is linear in the number of distinct expressions
(never a tree printed or hashed again and again). Sums and products are kept as polynomials (sorted
terms, integer coefficients); floor/ceil division, remainder, max and min are atoms of those
polynomials after their own folds (constants, exact division, `max(a, a) = a`, `max(a, 1)` of
dims is not folded: a dim may be 0).

`str(e)` is the text the graph dialect prints (`graph.dims`, `graph.dim_checks`), and `parse(text)`
reads it back: names are identifiers (`[A-Za-z_][A-Za-z0-9_.]*`) or single-quoted strings.
`e.evaluate(env)` computes the value from the symbols' values; `e.symbols()` lists its symbols.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping

_TABLE: dict[tuple, Expr] = {}


class Expr:
    """One interned expression node. Build them with the functions and operators of this module."""

    __slots__ = ("kind", "args", "_hash", "_str", "_syms", "__weakref__")

    kind: str  # const sym sum prod fdiv cdiv mod max min
    args: tuple

    def __new__(cls, kind: str, args: tuple) -> Expr:
        key = (kind, args)
        e = _TABLE.get(key)
        if e is None:
            e = object.__new__(cls)
            e.kind, e.args = kind, args
            e._hash = hash(key)  # children hash by identity: O(1) per node
            e._str = None
            e._syms = None
            _TABLE[key] = e
        return e

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return self is other

    def __reduce__(self):
        return (parse, (str(self),))

    # -- queries --------------------------------------------------------------------------------

    @property
    def value(self) -> int | None:
        """The integer, for a constant."""
        return self.args[0] if self.kind == "const" else None

    def symbols(self) -> tuple[str, ...]:
        """The symbol names in this expression, sorted."""
        if self._syms is None:
            if self.kind == "sym":
                self._syms = (self.args[0],)
            elif self.kind == "const":
                self._syms = ()
            else:
                names: set[str] = set()
                for c in self._children():
                    names.update(c.symbols())
                self._syms = tuple(sorted(names))
        return self._syms

    def _children(self) -> Iterable[Expr]:
        if self.kind == "sum":
            return (t for t, _ in self.args[0])
        if self.kind == "prod":
            return self.args
        if self.kind in ("fdiv", "cdiv", "mod", "max", "min"):
            return self.args
        return ()

    def evaluate(self, env: Mapping[str, int], memo: dict[Expr, int] | None = None) -> int:
        """The value, given every symbol's value (KeyError naming a missing symbol)."""
        memo = {} if memo is None else memo
        got = memo.get(self)
        if got is not None:
            return got
        k, a = self.kind, self.args
        if k == "const":
            v = a[0]
        elif k == "sym":
            v = env[a[0]]
        elif k == "sum":
            v = a[1] + sum(c * t.evaluate(env, memo) for t, c in a[0])
        elif k == "prod":
            v = 1
            for f in a:
                v *= f.evaluate(env, memo)
        else:
            x, y = (o.evaluate(env, memo) for o in a)
            if k in ("fdiv", "cdiv", "mod") and y == 0:
                raise ZeroDivisionError(f"division by zero in {self}")
            v = {"fdiv": lambda: x // y, "cdiv": lambda: -(-x // y), "mod": lambda: x % y,
                 "max": lambda: max(x, y), "min": lambda: min(x, y)}[k]()
        memo[self] = v
        return v

    def materialize(self, emit: Callable[[str, tuple], object], memo: dict[Expr, object]) -> object:
        """Build the expression with `emit(kind, operands)` (kinds: const(int), sym(name), add, sub,
        mul, fdiv, cdiv, mod, max, min on built operands), each distinct node once (via `memo`)."""
        got = memo.get(self)
        if got is not None:
            return got
        k, a = self.kind, self.args
        if k in ("const", "sym"):
            out = emit(k, a)
        elif k == "sum":
            acc = None
            neg: list[object] = []
            for t, c in a[0]:
                v = t.materialize(emit, memo)
                if abs(c) != 1:
                    v = emit("mul", (const(abs(c)).materialize(emit, memo), v))
                if c < 0:
                    neg.append(v)
                else:
                    acc = v if acc is None else emit("add", (acc, v))
            if acc is None:
                acc = const(a[1]).materialize(emit, memo)
            elif a[1] > 0:
                acc = emit("add", (acc, const(a[1]).materialize(emit, memo)))
            for v in neg:
                acc = emit("sub", (acc, v))
            if a[1] < 0 and a[0] and any(c > 0 for _, c in a[0]):
                acc = emit("sub", (acc, const(-a[1]).materialize(emit, memo)))
            out = acc
        elif k == "prod":
            acc = a[0].materialize(emit, memo)
            for f in a[1:]:
                acc = emit("mul", (acc, f.materialize(emit, memo)))
            out = acc
        else:
            out = emit(k, tuple(o.materialize(emit, memo) for o in a))
        memo[self] = out
        return out

    # -- printing -------------------------------------------------------------------------------

    def __str__(self) -> str:
        if self._str is None:
            self._str = _print(self)
        return self._str

    def __repr__(self) -> str:
        return f"Expr({str(self)!r})"

    # -- operators ------------------------------------------------------------------------------

    def __add__(self, other: Expr | int) -> Expr:
        return add(self, other)

    __radd__ = __add__

    def __sub__(self, other: Expr | int) -> Expr:
        return add(self, mul(-1, other))

    def __rsub__(self, other: Expr | int) -> Expr:
        return add(other, mul(-1, self))

    def __mul__(self, other: Expr | int) -> Expr:
        return mul(self, other)

    __rmul__ = __mul__

    def __floordiv__(self, other: Expr | int) -> Expr:
        return floordiv(self, other)


def as_expr(x: Expr | int) -> Expr:
    if isinstance(x, Expr):
        return x
    if isinstance(x, bool) or not isinstance(x, int):
        raise TypeError(f"not a dim: {x!r}")
    return const(x)


def const(n: int) -> Expr:
    return Expr("const", (int(n),))


def sym(name: str) -> Expr:
    if not name:
        raise ValueError("a symbol needs a name")
    return Expr("sym", (name,))


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")


# -- polynomials: a sum is ((term, coeff), ...) sorted by the terms' text, plus a constant; a term is
# an atom or a prod (atoms sorted, repeated for powers) --------------------------------------------


def _as_poly(e: Expr) -> tuple[dict[Expr, int], int]:
    if e.kind == "const":
        return {}, e.args[0]
    if e.kind == "sum":
        return dict(e.args[0]), e.args[1]
    return {e: 1}, 0


def _from_poly(terms: Mapping[Expr, int], c: int) -> Expr:
    items = [(t, k) for t, k in terms.items() if k]
    if not items:
        return const(c)
    if len(items) == 1 and c == 0 and items[0][1] == 1:
        return items[0][0]
    items.sort(key=lambda tk: _order(tk[0]))
    return Expr("sum", (tuple(items), c))


def _order(e: Expr) -> tuple:
    return (len(e.args) if e.kind == "prod" else 1, str(e))


def add(*xs: Expr | int) -> Expr:
    terms: dict[Expr, int] = {}
    c = 0
    for x in xs:
        t, k = _as_poly(as_expr(x))
        c += k
        for term, coeff in t.items():
            terms[term] = terms.get(term, 0) + coeff
    return _from_poly(terms, c)


def _split_coeff(e: Expr) -> tuple[int, tuple[Expr, ...]]:
    """A non-sum as coefficient times sorted atoms."""
    if e.kind == "const":
        return e.args[0], ()
    if e.kind == "prod":
        return 1, e.args
    return 1, (e,)


def _term(atoms: list[Expr]) -> Expr:
    atoms.sort(key=str)
    return atoms[0] if len(atoms) == 1 else Expr("prod", tuple(atoms))


def mul(*xs: Expr | int) -> Expr:
    # expand: a product of polynomials is a polynomial
    acc_terms: dict[tuple[Expr, ...], int] = {(): 1}
    for x in xs:
        t, c = _as_poly(as_expr(x))
        parts = [((), c)] if c else []
        parts += [(_split_coeff(term)[1], coeff) for term, coeff in t.items()]
        new: dict[tuple[Expr, ...], int] = {}
        for atoms_a, ka in acc_terms.items():
            for atoms_b, kb in parts:
                key = tuple(sorted(atoms_a + atoms_b, key=str))
                new[key] = new.get(key, 0) + ka * kb
        acc_terms = new
    terms: dict[Expr, int] = {}
    c = 0
    for atoms, k in acc_terms.items():
        if not atoms:
            c += k
        else:
            term = _term(list(atoms))
            terms[term] = terms.get(term, 0) + k
    return _from_poly(terms, c)


def _exact_quotient(a: Expr, b: Expr) -> Expr | None:
    """a / b when b divides every term of a exactly (b a monomial: coefficient times atoms)."""
    if b.kind == "sum":
        if a is b:
            return const(1)
        terms_b, c_b = _as_poly(b)
        if c_b or len(terms_b) != 1:
            return None
        ((t_b, kb),) = terms_b.items()  # a monomial with a coefficient: 16*batch*seq
        atoms_b = _split_coeff(t_b)[1]
    else:
        kb, atoms_b = _split_coeff(b)
    if kb == 0:
        return None
    terms, c = _as_poly(a)
    if c % kb or (c and atoms_b):
        return None
    out: dict[Expr, int] = {}
    out_c = c // kb
    for term, k in terms.items():
        if k % kb:
            return None
        atoms = list(_split_coeff(term)[1])
        for x in atoms_b:
            if x not in atoms:
                return None
            atoms.remove(x)
        if atoms:
            t = _term(atoms)
            out[t] = out.get(t, 0) + k // kb
        else:
            out_c += k // kb
    return _from_poly(out, out_c)


def floordiv(a: Expr | int, b: Expr | int) -> Expr:
    a, b = as_expr(a), as_expr(b)
    if b.value == 1:
        return a
    if a.value is not None and b.value is not None and b.value:
        return const(a.value // b.value)
    q = _exact_quotient(a, b)
    if q is not None:
        return q
    return Expr("fdiv", (a, b))


def ceildiv(a: Expr | int, b: Expr | int) -> Expr:
    a, b = as_expr(a), as_expr(b)
    if b.value == 1:
        return a
    if a.value is not None and b.value is not None and b.value:
        return const(-(-a.value // b.value))
    q = _exact_quotient(a, b)
    if q is not None:
        return q
    return Expr("cdiv", (a, b))


def mod(a: Expr | int, b: Expr | int) -> Expr:
    a, b = as_expr(a), as_expr(b)
    if b.value == 1:
        return const(0)
    if a.value is not None and b.value is not None and b.value:
        return const(a.value % b.value)
    if _exact_quotient(a, b) is not None:
        return const(0)
    return Expr("mod", (a, b))


def _minmax(kind: str, a: Expr | int, b: Expr | int) -> Expr:
    a, b = as_expr(a), as_expr(b)
    if a is b:
        return a
    if a.value is not None and b.value is not None:
        return const(max(a.value, b.value) if kind == "max" else min(a.value, b.value))
    # max(max(a, b), b) = max(a, b)
    for x, y in ((a, b), (b, a)):
        if x.kind == kind and y in x.args:
            return x
    a, b = sorted((a, b), key=str)
    return Expr(kind, (a, b))


def maximum(a: Expr | int, b: Expr | int) -> Expr:
    return _minmax("max", a, b)


def minimum(a: Expr | int, b: Expr | int) -> Expr:
    return _minmax("min", a, b)


def bcast(a: Expr | int, b: Expr | int) -> Expr:
    """The NumPy broadcasting rule on two dims: equal dims are that dim, a 1 takes the other;
    otherwise max (the run time must check `a == b or a == 1 or b == 1`: see `bcast_ok`)."""
    a, b = as_expr(a), as_expr(b)
    if a is b or b.value == 1:
        return a
    if a.value == 1:
        return b
    return maximum(a, b)


def bcast_ok(a: int, b: int) -> bool:
    return a == b or a == 1 or b == 1


# -- text -----------------------------------------------------------------------------------------


def _name_text(n: str) -> str:
    if _NAME.match(n) and n not in ("max", "min", "ceildiv"):
        return n
    return "'" + n.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _atom_text(e: Expr) -> str:
    """Text safe as an operand of * / %."""
    s = str(e)
    if e.kind == "sum" or e.kind == "const" and e.args[0] < 0:
        return f"({s})"
    return s


def _print(e: Expr) -> str:
    k, a = e.kind, e.args
    if k == "const":
        return str(a[0])
    if k == "sym":
        return _name_text(a[0])
    if k == "prod":
        return "*".join(_atom_text(f) for f in a)
    if k in ("fdiv", "mod"):
        lhs = _atom_text(a[0]) if a[0].kind != "prod" and a[0].kind != k else str(a[0])
        rhs = str(a[1]) if a[1].kind in ("const", "sym", "max", "min", "cdiv") else f"({a[1]})"
        if a[0].kind in ("fdiv", "mod") and a[0].kind != k:
            lhs = f"({a[0]})"
        return f"{lhs}{'/' if k == 'fdiv' else '%'}{rhs}"
    if k == "cdiv":
        return f"ceildiv({a[0]}, {a[1]})"
    if k in ("max", "min"):
        return f"{k}({a[0]}, {a[1]})"
    # sum: positive terms first as written, then negative ones, the constant last
    out = ""
    for t, c in a[0]:
        body = str(t) if t.kind not in ("fdiv", "mod") else str(t)
        if t.kind == "sum":  # never nested, but keep the text unambiguous
            body = f"({body})"
        mag = abs(c)
        piece = body if mag == 1 else f"{mag}*{_atom_text(t) if t.kind in ('fdiv', 'mod') else body}"
        if t.kind in ("fdiv", "mod") and mag != 1:
            piece = f"{mag}*({body})"
        if not out:
            out = piece if c > 0 else "-" + piece
        else:
            out += ("+" if c > 0 else "-") + piece
    if a[1]:
        out += f"+{a[1]}" if a[1] > 0 else f"-{-a[1]}"
    return out


_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_.]*)|('(?:[^'\\]|\\.)*')|(.))")


class ParseError(ValueError):
    pass


def parse(text: str) -> Expr:
    """Read the text `str(e)` prints (also `?`-free user text such as `(h - 3) / 2 + 1`)."""
    toks: list[tuple[str, object]] = []
    for m in _TOKEN.finditer(text):
        num, name, quoted, other = m.groups()
        if num is not None:
            toks.append(("num", int(num)))
        elif name is not None:
            toks.append(("name", name))
        elif quoted is not None:
            toks.append(("name", re.sub(r"\\(.)", r"\1", quoted[1:-1])))
        elif other is not None and not other.isspace():
            toks.append(("op", other))
    pos = 0

    def peek() -> tuple[str, object] | None:
        return toks[pos] if pos < len(toks) else None

    def take(op: str | None = None) -> tuple[str, object]:
        nonlocal pos
        t = peek()
        if t is None or op is not None and t != ("op", op):
            raise ParseError(f"bad dim expression {text!r}: expected {op or 'more'} at token {pos}")
        pos += 1
        return t

    def expr() -> Expr:
        e = term()
        while (t := peek()) in (("op", "+"), ("op", "-")):
            take()
            r = term()
            e = e + r if t[1] == "+" else e - r
        return e

    def term() -> Expr:
        e = factor()
        while (t := peek()) in (("op", "*"), ("op", "/"), ("op", "%")):
            take()
            r = factor()
            e = e * r if t[1] == "*" else floordiv(e, r) if t[1] == "/" else mod(e, r)
        return e

    def factor() -> Expr:
        t = take()
        if t == ("op", "-"):
            return mul(-1, factor())
        if t == ("op", "("):
            e = expr()
            take(")")
            return e
        if t[0] == "num":
            return const(t[1])  # type: ignore[arg-type]
        if t[0] == "name":
            if t[1] in ("max", "min", "ceildiv") and peek() == ("op", "("):
                take("(")
                a = expr()
                take(",")
                b = expr()
                take(")")
                return {"max": maximum, "min": minimum, "ceildiv": ceildiv}[t[1]](a, b)  # type: ignore[index]
            return sym(t[1])  # type: ignore[arg-type]
        raise ParseError(f"bad dim expression {text!r}: unexpected {t[1]!r}")

    e = expr()
    if pos != len(toks):
        raise ParseError(f"bad dim expression {text!r}: unexpected {toks[pos][1]!r}")
    return e


# -- checking inputs ----------------------------------------------------------------------------


def failed_check(checks: Iterable[Mapping[str, str]],
                 inputs: Iterable[tuple[str, Iterable[str], tuple[int, ...]]]) -> str | None:
    """The message for the first check (`graph.dim_checks` entries: kind, lhs, rhs, op, loc) that
    the inputs' dims break, None when all hold. `inputs`: (name, dim names, shape) per input."""
    env: dict[str, int] = {}
    where: dict[str, tuple[int, str, int]] = {}  # symbol -> (input position, input name, dim)
    for k, (name, dim_names, shape) in enumerate(inputs):
        names = list(dim_names)
        for i, d in enumerate(shape):
            # an unnamed dim is the fresh symbol the importer / graph-infer-dims would give it
            n = (names[i] if i < len(names) else "") or f"{name}.dim{i}"
            if n not in env:
                env[n] = int(d)
                where[n] = (k, name, i)
    memo: dict[Expr, int] = {}
    for c in checks:
        lhs, rhs = _parse_cached(c["lhs"]), _parse_cached(c["rhs"])
        try:
            a, b = lhs.evaluate(env, memo), rhs.evaluate(env, memo)
        except KeyError:
            continue  # a symbol no input names (not checkable here)
        except ZeroDivisionError:
            a, b = None, None
        ok = a is not None and (bcast_ok(a, b) if c["kind"] == "bcast" else a == b)
        if ok:
            continue
        syms = [s for s in (*lhs.symbols(), *rhs.symbols()) if s in where]
        _, name, i = min((where[s] for s in syms), default=(0, "?", 0))
        s = next((s for s in syms if where[s][1:] == (name, i)), "?")
        op = c.get("op", "an op") + (f" ({c['loc']})" if c.get("loc") else "")
        if c["kind"] == "bcast":
            return (f"input '{name}': dim {i} ('{s}') is {env.get(s)}: {op} broadcasts {lhs} = {a} "
                    f"with {rhs} = {b}, which must be equal or 1")
        return (f"input '{name}': dim {i} ('{s}') is {env.get(s)}, which makes {op} impossible: "
                f"{lhs} = {a} must equal {rhs} = {b}")
    return None


_PARSED: dict[str, Expr] = {}


def _parse_cached(text: str) -> Expr:
    e = _PARSED.get(text)
    if e is None:
        e = _PARSED[text] = parse(text)
    return e
