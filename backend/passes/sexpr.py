"""Symbolic scalar expressions: integer polynomials over SSA scalar values.

Pointer and mask analysis describe offsets, strides and bounds as these expressions; they
simplify on construction (so `base - base` vanishes) and are emitted as scalar instructions
only where a DMA descriptor needs them.
"""
from __future__ import annotations

from dataclasses import dataclass

from backend.tile_ir import Value


@dataclass(frozen=True)
class SExpr:
    terms: tuple  # ((monomial, coeff), ...) sorted, coeff != 0
    const: int = 0

    @staticmethod
    def of(value: int | Value) -> "SExpr":
        if isinstance(value, Value):
            return SExpr((((value,), 1),), 0)
        return SExpr((), int(value))

    def _dict(self) -> dict:
        return dict(self.terms)

    @staticmethod
    def _make(d: dict, const: int) -> "SExpr":
        items = sorted(((m, c) for m, c in d.items() if c != 0), key=lambda mc: tuple(v.name for v in mc[0]))
        return SExpr(tuple(items), const)

    def __add__(self, other: "SExpr | int") -> "SExpr":
        other = other if isinstance(other, SExpr) else SExpr.of(other)
        d = self._dict()
        for m, c in other.terms:
            d[m] = d.get(m, 0) + c
        return SExpr._make(d, self.const + other.const)

    def __neg__(self) -> "SExpr":
        return SExpr(tuple((m, -c) for m, c in self.terms), -self.const)

    def __sub__(self, other: "SExpr | int") -> "SExpr":
        other = other if isinstance(other, SExpr) else SExpr.of(other)
        return self + (-other)

    def __mul__(self, other: "SExpr | int") -> "SExpr":
        other = other if isinstance(other, SExpr) else SExpr.of(other)
        d: dict = {}
        for m1, c1 in self.terms:
            for m2, c2 in other.terms:
                m = tuple(sorted(m1 + m2, key=lambda v: v.name))
                d[m] = d.get(m, 0) + c1 * c2
        for m, c in self.terms:
            d[m] = d.get(m, 0) + c * other.const
        for m, c in other.terms:
            d[m] = d.get(m, 0) + c * self.const
        return SExpr._make(d, self.const * other.const)

    @property
    def is_const(self) -> bool:
        return not self.terms

    @property
    def values(self) -> set:
        return {v for m, _ in self.terms for v in m}

    def __str__(self) -> str:
        parts = []
        for m, c in self.terms:
            s = "*".join(v.name for v in m)
            parts.append(s if c == 1 else f"{c}*{s}")
        if self.const or not parts:
            parts.append(str(self.const))
        return " + ".join(parts)


ZERO = SExpr.of(0)
ONE = SExpr.of(1)
