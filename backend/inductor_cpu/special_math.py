"""Special functions as `@triton.jit` functions: what Inductor's generated kernels call for the
ops of backend/inductor_cpu/special.py (switch `special_functions`).

Each function takes and returns blocks of one float dtype (Inductor computes bf16 in fp32) and
follows the edge cases of PyTorch's eager CPU kernels (n < 0, |x| == 1, 0, nan, inf), which the
docstrings state. The methods are textbook ones, computed in fp32 (eager computes zeta and
polygamma in double; the results here agree with eager to about 1e-6 relative on OpInfo's
samples and on edge-case grids, well inside T4's 1e-4):

- orthogonal polynomials: the three-term recurrence of each family, as eager, up to the degree
  of each element. The degree is a tensor, so the loop runs to the largest degree in the block
  that still needs it, each element updating only while it is below its own degree (and not nan,
  where eager stops); where eager switches to a closed form (cos(n acos x), ...) so does this.
- digamma: recurrence psi(x) = psi(x + 1) - 1/x up to x >= 10, then the asymptotic series in
  1/x^2 (Bernoulli numbers); reflection psi(1 - x) - pi / tan(pi x) below 0.
  trigamma: the same with 1/x^2 terms and the reflection pi^2 / sin^2(pi x).
- Hurwitz zeta(x, q): direct sum of (q + k)^-x until q + k > 9 (and at least 9 terms), then the
  Euler-Maclaurin tail with 12 Bernoulli terms. polygamma(n, x) = (-1)^(n+1) n! zeta(n+1, x).
- i0e, i1e: exp(-|x|) I(|x|) with the SFU's i0 / i1 up to |x| = 50, beyond it Hankel's
  asymptotic expansion of I_nu (5 terms).
- K0, K1 (and exp(x) K): x <= 2 the power series of K_nu around 0 (with the SFU's I_nu);
  x > 2 the integral e^x K_nu(x) = int_0^inf exp(-x (cosh t - 1)) cosh(nu t) dt by the
  trapezoidal rule (12 steps up to where the integrand is below e^-26: exponentially accurate
  for this analytic, doubly decaying integrand).
- spherical j0: sin(x) / x, its Taylor polynomial below |x| = 0.5.
- ndtri: sqrt(2) erfinv(2p - 1) in the centre; in the tails (p < 0.1 or > 0.9) a rational
  first guess in sqrt(-2 log p) refined by two Halley steps on Phi(x) = p through erfc.
- igamma / igammac (regularized incomplete gamma P, Q): the power series of P for x < a + 1,
  the continued fraction of Q otherwise (modified Lentz), the other one as 1 minus it; the
  prefactor x^a e^-x / Gamma(a) through lgamma below a = 10, through Stirling's series and
  log1p above (no cancellation of large logarithms). Eager switches to Temme's uniform
  expansion where a ~ x and a > 20; the series / fraction here take O(sqrt(a)) steps there
  (at most 2000) and stay within 1e-5 up to a = 1e5.
- Loops whose length depends on the data (polynomial degree, zeta's q below 9, the incomplete
  gamma's convergence) run while any element of the block still needs a step: a scalar
  condition from a max over the block. zeta stops after 2^17 direct terms (q < -1.3e5, where
  eager takes |q| steps).

- airy_ai: the Maclaurin series on [-4.5, 2], sqrt(x/3) K_(1/3)(2/3 x^1.5) / pi by the same
  quadrature above 2, the oscillatory asymptotic expansion below -4.5 (accurate to about 2e-6
  absolute there and in the series' range, 1e-5 relative above 2).
"""
import triton
import triton.language as tl
from triton.language.extra import libdevice

_INF = tl.constexpr(float("inf"))
_PI = tl.constexpr(3.141592653589793)
_EULER_GAMMA = tl.constexpr(0.5772156649015329)
_EPS = tl.constexpr(5.9604644775390625e-08)  # 2^-24


# ----------------------------------------------------------------------------- helpers

@triton.jit
def _block_max(v):
    """The largest element of `v`, a block of any rank or a scalar (an Inductor kernel of 0-d
    tensors computes on scalars): a scalar."""
    b = v + tl.zeros([1], v.dtype)  # a block of rank >= 1 either way
    return tl.max(tl.reshape(b, [b.numel], can_reorder=True), axis=0)


@triton.jit
def _any(v):
    """Whether any element of `v` (bool) is set: a scalar for loop conditions."""
    return _block_max(v.to(tl.int32)) > 0


@triton.jit
def _degree(n):
    """A float degree as eager reads it: truncated to an integer; nan, inf and values out of
    int64's range read as negative."""
    ok = (n == n) & (tl.abs(n) < 9.0e18)
    return tl.where(ok, n, -1.0).to(tl.int64)


@triton.jit
def _ones(x):
    return tl.full(x.shape, 1.0, x.dtype)


@triton.jit
def _nan(x):
    # 0 * inf (a nan global would fail Triton's check that globals keep their value: nan != nan)
    return tl.zeros_like(x) * _INF


# ----------------------------------------------------------------------------- polynomials

@triton.jit
def chebyshev(x, n, KIND: tl.constexpr, SHIFTED: tl.constexpr):
    """Chebyshev polynomials of the first to fourth kind (KIND 0..3: T, U, V, W) of x, or of
    2x - 1 (SHIFTED), at degree n. Eager's cases in its order: n < 0 -> 0; at the ends of the
    interval (|x| == 1; shifted: x == 1 or x == 0) the closed values; inside it, above a degree
    (T: 6; U, V, W: 8; shifted U, V: 6, W: 4) the trigonometric form; else the recurrence
    P_k = 2y P_(k-1) - P_(k-2)."""
    x, n = tl.broadcast(x, n)
    kn = _degree(n)
    nf = kn.to(x.dtype)
    even = (kn % 2) == 0
    if SHIFTED:
        y = x + x - 1.0
        hi = x == 1.0
        lo = x == 0.0
        if KIND == 3:
            closed_from = 4
        else:
            closed_from = 6
    else:
        y = x
        hi = x == 1.0
        lo = x == -1.0
        if KIND == 0:
            closed_from = 6
        else:
            closed_from = 8
    one = _ones(x)
    n1 = nf + 1.0
    n2 = nf + nf + 1.0
    if KIND == 0:
        hi_val = one
        lo_mag = one
        q1 = y
    elif KIND == 1:
        hi_val = n1
        lo_mag = n1
        q1 = y + y
    elif KIND == 2:
        hi_val = one
        lo_mag = n2
        q1 = y + y - 1.0
    else:
        hi_val = n2
        lo_mag = one
        q1 = y + y + 1.0
    lo_val = tl.where(even, lo_mag, -lo_mag)
    ends = hi | lo
    ends_val = tl.where(hi, hi_val, lo_val)

    closed = (kn > closed_from) & (tl.abs(y) < 1.0) & ~ends
    theta = libdevice.acos(tl.where(closed, y, 0.0))
    if KIND == 0:
        closed_val = libdevice.cos(nf * theta)
    elif KIND == 1:
        s = libdevice.sin(theta)
        closed_val = tl.where(s != 0.0, libdevice.sin(n1 * theta) / s, n1 * libdevice.cos(n1 * theta) / y)
    elif KIND == 2:
        half = theta / 2.0
        closed_val = tl.where(libdevice.sin(half) != 1.0, libdevice.cos((nf + 0.5) * theta) / libdevice.cos(half),
                              lo_val)
    else:
        half = theta / 2.0
        if SHIFTED:
            edge = lo_val
        else:
            edge = tl.where(x > 0.0, n2, lo_val)
        closed_val = tl.where(libdevice.cos(half) != 1.0, libdevice.sin((nf + 0.5) * theta) / libdevice.sin(half),
                              edge)

    p = one
    q = q1
    two_y = y + y
    k = 2
    active = (kn >= 2) & ~ends & ~closed & (q == q)
    while _any(active):
        r = two_y * q - p
        p = tl.where(active, q, p)
        q = tl.where(active, r, q)
        k += 1
        active = active & (k <= kn) & (q == q)
    out = tl.where(kn == 1, q1, q)
    out = tl.where(kn == 0, one, out)
    out = tl.where(closed, closed_val, out)
    out = tl.where(ends, ends_val, out)
    return tl.where(kn < 0, 0.0, out)










@triton.jit
def hermite(x, n, PHYSICIST: tl.constexpr):
    """Hermite H (PHYSICIST: H_k = 2x H_(k-1) - 2(k-1) H_(k-2)) or He (He_k = x He_(k-1) -
    (k-1) He_(k-2)). n < 0 -> 0; n > 128 -> nan (eager's limit for fp32)."""
    x, n = tl.broadcast(x, n)
    kn = _degree(n)
    one = _ones(x)
    if PHYSICIST:
        c = x + x
        step = 2.0
    else:
        c = x
        step = 1.0
    p = one
    q = c
    k = 1
    active = (kn >= 2) & (kn <= 128)
    while _any(active):
        r = c * q - (k * step) * p
        p = tl.where(active, q, p)
        q = tl.where(active, r, q)
        k += 1
        active = active & (k < kn)
    out = tl.where(kn > 128, _nan(x), q)
    out = tl.where(kn == 0, one, out)
    return tl.where(kn < 0, 0.0, out)




@triton.jit
def laguerre_l(x, n):
    """Laguerre L_n: (k + 1) L_(k+1) = (2k + 1 - x) L_k - k L_(k-1). n < 0 -> 0; x == 0 -> 1."""
    x, n = tl.broadcast(x, n)
    kn = _degree(n)
    one = _ones(x)
    p = one
    q = 1.0 - x
    k = 1
    active = (kn >= 2) & (x != 0.0) & (q == q)
    while _any(active):
        r = (((k + k) + (1.0 - x)) * q - k * p) / (k + 1)
        p = tl.where(active, q, p)
        q = tl.where(active, r, q)
        k += 1
        active = active & (k < kn) & (q == q)
    out = tl.where((kn == 0) | (x == 0.0), one, q)
    return tl.where(kn < 0, 0.0, out)


@triton.jit
def legendre_p(x, n):
    """Legendre P_n: (k + 1) P_(k+1) = (2k + 1) x P_k - k P_(k-1). n < 0 -> 0; |x| == 1 ->
    1 or (-1)^n."""
    x, n = tl.broadcast(x, n)
    kn = _degree(n)
    one = _ones(x)
    ends = tl.abs(x) == 1.0
    p = one
    q = x
    k = 1
    active = (kn >= 2) & ~ends & (q == q)
    while _any(active):
        r = ((k + k + 1) * x * q - k * p) / (k + 1)
        p = tl.where(active, q, p)
        q = tl.where(active, r, q)
        k += 1
        active = active & (k < kn) & (q == q)
    out = tl.where(kn == 0, one, q)
    out = tl.where(ends, tl.where((x > 0.0) | ((kn % 2) == 0), one, -one), out)
    return tl.where(kn < 0, 0.0, out)


# ----------------------------------------------------------------------------- gamma family

@triton.jit
def digamma(x):
    """psi(x). x == +-0 -> -+inf; negative integers and -inf -> nan; +inf -> inf."""
    neg = x < 0.0
    whole = libdevice.trunc(x)
    frac = x - whole
    z = tl.where(neg, 1.0 - x, x)
    acc = tl.zeros_like(x)
    for _ in tl.static_range(10):  # z > 0 reaches 10 in at most 10 steps
        below = z < 10.0
        acc = tl.where(below, acc - 1.0 / z, acc)
        z = tl.where(below, z + 1.0, z)
    w = 1.0 / (z * z)
    # sum_k B_2k / (2k z^2k), k = 1..7
    tail = w * (8.33333333333333333333e-2 + w * (-8.33333333333333333333e-3 + w * (3.96825396825396825397e-3 + w * (
        -4.16666666666666666667e-3 + w * (7.57575757575757575758e-3 + w * (-2.10927960927960927961e-2
                                                                           + w * 8.33333333333333333333e-2))))))
    tail = tl.where(z < 1.0e17, tail, 0.0)
    big = acc + libdevice.log(z) - 0.5 / z - tail
    big = tl.where(z == 10.0, acc + 2.25175258906672110764, big)
    reflected = big - _PI * libdevice.cos(_PI * frac) / libdevice.sin(_PI * frac)
    out = tl.where(neg, reflected, big)
    out = tl.where(neg & (x == whole), _nan(x), out)
    return tl.where(x == 0.0, libdevice.copysign(_ones(x) * _INF, -x), out)


@triton.jit
def _trigamma(x):
    """psi'(x): reflection below 1/2, six recurrence steps, then the asymptotic series."""
    low = x < 0.5
    s = libdevice.sin(_PI * x)
    acc = tl.where(low, -(_PI * _PI) / (s * s), 0.0)
    z = tl.where(low, 1.0 - x, x)
    for _ in tl.static_range(6):
        acc += 1.0 / (z * z)
        z += 1.0
    w = 1.0 / (z * z)
    acc += (1.0 + 1.0 / (2.0 * z) + w * (1.0 / 6.0 - w * (1.0 / 30.0 - w * (1.0 / 42.0)))) / z
    return tl.where(low, -acc, acc)


@triton.jit
def _pow_neg(a, x):
    """a^-x for any sign of a where x is an integer when a < 0 (zeta only meets those)."""
    m = libdevice.pow(tl.abs(a), -x)
    odd = tl.abs(libdevice.fmod(x, 2.0)) == 1.0
    return tl.where((a < 0.0) & odd, -m, m)


@triton.jit
def zeta(x, q):
    """Hurwitz zeta(x, q) = sum_k (q + k)^-x. x == 1 -> inf; x < 1 -> nan; q <= 0: an integer q
    -> inf, else nan unless x is an integer."""
    x, q = tl.broadcast(x, q)
    s = _pow_neg(q, x)
    a = q
    b = tl.zeros_like(s)
    i = 0
    # elements whose value is an edge case below take no steps (q = -inf would never reach 9);
    # at most 2^17 steps (a q below -1.3e5 takes longer than a kernel should: eager takes them)
    done = (s != s) | (x <= 1.0) | ((q <= 0.0) & ((q == libdevice.floor(q)) | (x != libdevice.floor(x))))
    active = ~done
    while _any(active):
        a = tl.where(active, a + 1.0, a)
        b = tl.where(active, _pow_neg(a, x), b)
        s = tl.where(active, s + b, s)
        i += 1
        done = done | (active & (tl.abs(b) < _EPS * tl.abs(s)))
        active = ~done & ((i < 9) | (a <= 9.0)) & (i < 131072)
    # Euler-Maclaurin tail at w = a: b w / (x - 1) - b / 2 + sum_j B_2j / (2j)! x(x+1)..(x+2j-2) b / w^(2j-1)
    w = a
    s_t = tl.where(done, s, s + b * w / (x - 1.0) - 0.5 * b)
    # term j: x (x+1) .. (x+2j) b / w^(2j+1) / ((2j+2)! / B_(2j+2)), its product g kept as one
    # running ratio (x^(2j+1) alone overflows fp32 where the term does not)
    g = b
    kk = tl.zeros_like(x)
    for j in tl.static_range(12):
        # (2j+2)! / B_(2j+2), j = 0..11
        if j == 0:
            c = 12.0
        elif j == 1:
            c = -720.0
        elif j == 2:
            c = 30240.0
        elif j == 3:
            c = -1209600.0
        elif j == 4:
            c = 47900160.0
        elif j == 5:
            c = -1.8924375803183791606e9
        elif j == 6:
            c = 7.47242496e10
        elif j == 7:
            c = -2.950130727918164224e12
        elif j == 8:
            c = 1.1646782814350067249e14
        elif j == 9:
            c = -4.5979787224074726105e15
        elif j == 10:
            c = 1.8152105401943546773e17
        else:
            c = -7.1661652561756670113e18
        g = g * ((x + kk) / w)
        t = g / c
        s_new = s_t + t
        s_t = tl.where(done, s_t, s_new)
        done = done | (tl.abs(t / s_new) < _EPS)
        kk += 1.0
        g = g * ((x + kk) / w)
        kk += 1.0
    out = tl.where((q <= 0.0) & (x != libdevice.floor(x)), _nan(x), s_t)
    out = tl.where((q <= 0.0) & (q == libdevice.floor(q)), _INF, out)
    out = tl.where(x < 1.0, _nan(x), out)
    return tl.where(x == 1.0, _INF, out)


@triton.jit
def polygamma(n, x):
    """psi^(n)(x); n (an integer, the same for every element) 0 -> digamma, 1 -> trigamma, else
    (-1)^(n+1) n! zeta(n + 1, x)."""
    order = _block_max(n + tl.zeros_like(x))
    if order == 0.0:
        out = digamma(x)
    elif order == 1.0:
        out = _trigamma(x)
    else:
        sign = tl.where(libdevice.fmod(order, 2.0) != 0.0, 1.0, -1.0)
        out = sign * libdevice.exp(libdevice.lgamma(order + 1.0)) * zeta(order + 1.0 + tl.zeros_like(x), x)
    return out


# ----------------------------------------------------------------------------- Bessel

@triton.jit
def i0e(x):
    """exp(-|x|) I0(x)."""
    ax = tl.abs(x)
    near = libdevice.exp(-ax) * libdevice.cyl_bessel_i0(tl.where(ax <= 50.0, ax, 0.0))
    r = 1.0 / tl.where(ax > 50.0, ax, 50.0)
    # I0(x) e^-x sqrt(2 pi x) ~ sum_k ((2k-1)!!)^2 / (k! 8^k x^k)
    far = (1.0 + r * (0.125 + r * (0.0703125 + r * (0.0732421875 + r * (0.112152099609375
                                                                      + r * 0.2271080017089844))))) \
        / libdevice.sqrt(2.0 * _PI * tl.where(ax > 50.0, ax, 50.0))
    out = tl.where(ax <= 50.0, near, tl.where(ax == _INF, 0.0, far))
    return tl.where(x != x, x, out)


@triton.jit
def i1e(x):
    """exp(-|x|) I1(x) (odd in x)."""
    ax = tl.abs(x)
    near = libdevice.exp(-ax) * libdevice.cyl_bessel_i1(tl.where(ax <= 50.0, ax, 0.0))
    r = 1.0 / tl.where(ax > 50.0, ax, 50.0)
    # I1(x) e^-x sqrt(2 pi x) ~ sum_k (-1)^k prod_{j<=k} (4 - (2j-1)^2) / (k! 8^k x^k)
    far = (1.0 + r * (-0.375 + r * (-0.1171875 + r * (-0.1025390625 + r * (-0.144195556640625
                                                                         + r * -0.2775764465332031))))) \
        / libdevice.sqrt(2.0 * _PI * tl.where(ax > 50.0, ax, 50.0))
    out = tl.where(ax <= 50.0, near, tl.where(ax == _INF, 0.0, far))
    out = tl.where(x != x, x, out)
    return tl.where(x < 0.0, -out, out)


@triton.jit
def _k_quadrature(z, NU: tl.constexpr):
    """e^z K_nu(z) for z >= about 1.8 (finite): the trapezoidal rule on
    int_0^T exp(-z (cosh t - 1)) cosh(nu t) dt, 12 steps, T where the exponent reaches 26."""
    h = libdevice.acosh(1.0 + 26.0 / z) / 12.0
    acc = tl.full(z.shape, 0.5, z.dtype)
    for j in tl.static_range(1, 13):
        t = h * j
        sh = libdevice.sinh(0.5 * t)
        g = libdevice.exp(-z * (2.0 * sh * sh))
        if NU != 0:
            g = g * libdevice.cosh(NU * t)
        acc += g
    return acc * h


@triton.jit
def _k_scaled_integral(x, NU: tl.constexpr):
    """e^x K_nu(x) for x > 2 (other x give a finite placeholder)."""
    xs = tl.where(x > 2.0, x, 2.0)
    xs = tl.where(xs == _INF, 3.0e38, xs)
    return _k_quadrature(xs, NU)


@triton.jit
def _k_series(x, NU: tl.constexpr):
    """K_nu(x) for 0 < x <= 2 (others give a finite placeholder) from its expansion at 0:
    K0 = -(log(x/2) + gamma) I0(x) + sum_k H_k (x^2/4)^k / k!^2,
    K1 = 1/x + log(x/2) I1(x) - x/4 sum_k (H_k + H_(k+1) - 2 gamma) (x^2/4)^k / (k! (k+1)!)."""
    xs = tl.where((x > 0.0) & (x <= 2.0), x, 1.0)
    u = 0.25 * xs * xs
    lg = libdevice.log(0.5 * xs)
    term = _ones(xs)
    harm = tl.zeros_like(xs)
    acc = tl.zeros_like(xs)
    if NU == 0:
        for k in tl.static_range(1, 12):
            term = term * u / (k * k)
            harm += 1.0 / k
            acc += harm * term
        out = acc - (lg + _EULER_GAMMA) * libdevice.cyl_bessel_i0(xs)
    else:
        acc = 1.0 - 2.0 * _EULER_GAMMA  # k = 0: H_0 + H_1 - 2 gamma
        for k in tl.static_range(1, 12):
            term = term * u / (k * (k + 1))
            harm += 1.0 / k
            acc += (harm + harm + 1.0 / (k + 1) - 2.0 * _EULER_GAMMA) * term
        out = 1.0 / xs + lg * libdevice.cyl_bessel_i1(xs) - 0.25 * xs * acc
    return out


@triton.jit
def bessel_k(x, NU: tl.constexpr, SCALED: tl.constexpr):
    small = _k_series(x, NU)
    large = _k_scaled_integral(x, NU)
    if SCALED:
        small = small * libdevice.exp(tl.where(x <= 2.0, x, 0.0))
        out = tl.where(x <= 2.0, small, large)
    else:
        out = tl.where(x <= 2.0, small, libdevice.exp(-x) * large)
    out = tl.where(x == _INF, 0.0, out)
    out = tl.where((x < 0.0) | (x != x), _nan(x), out)
    return tl.where(x == 0.0, _INF, out)






@triton.jit
def spherical_j0(x):
    """sin(x) / x; +-inf -> 0."""
    w = x * x
    # sum_k (-1)^k x^2k / (2k+1)!, k = 0..6
    series = 1.0 + w * (-1.0 / 6.0 + w * (1.0 / 120.0 + w * (-1.0 / 5040.0 + w * (
        1.0 / 362880.0 + w * (-1.0 / 39916800.0 + w * (1.0 / 6227020800.0))))))
    out = tl.where(tl.abs(x) < 0.5, series, libdevice.sin(x) / x)
    return tl.where(tl.abs(x) == _INF, 0.0, out)


@triton.jit
def airy_ai(x):
    """Ai(x). +-inf -> nan (as eager), x > 103.892 -> 0.
    -4.5 <= x <= 2: the Maclaurin series Ai(0) f(x) + Ai'(0) g(x) (24 terms; at most 2e-6 off
    where its terms cancel most, x = -4.5); x > 2: Ai(x) = sqrt(x/3) K_(1/3)(zeta) / pi,
    zeta = 2/3 x^1.5, by the quadrature of _k_quadrature; x < -4.5: the asymptotic expansion
    pi^-1/2 |x|^-1/4 (cos(zeta - pi/4) P(zeta) + sin(zeta - pi/4) Q(zeta)), 10 terms
    u_k / zeta^k (u_k = u_(k-1) (6k-5)(6k-3)(6k-1) / ((2k-1) 216 k))."""
    one = _ones(x)
    mid = (x >= -4.5) & (x <= 2.0)
    xm = tl.where(mid, x, 0.0)
    x3 = xm * xm * xm
    tf = one
    tg = xm
    f = one
    g = xm
    for k in tl.static_range(1, 24):
        tf = tf * x3 / ((3 * k - 1) * (3 * k))
        tg = tg * x3 / ((3 * k) * (3 * k + 1))
        f += tf
        g += tg
    series = 0.355028053887817239 * f - 0.258819403792806798 * g

    xp = tl.where(x > 2.0, x, 2.0)
    xp = tl.where(xp > 104.0, 104.0, xp)
    zp = (2.0 / 3.0) * xp * libdevice.sqrt(xp)
    right = (1.0 / _PI) * libdevice.sqrt(xp / 3.0) * libdevice.exp(-zp) * _k_quadrature(zp, 1.0 / 3.0)

    xn = tl.where(x < -4.5, -x, 4.5)
    xn = tl.where(xn == _INF, 4.5, xn)
    zn = (2.0 / 3.0) * xn * libdevice.sqrt(xn)
    r = 1.0 / zn
    r2 = r * r
    big_p = 1.0 - r2 * (0.037133487654320986 - r2 * (0.05764919041266972 - r2 * (0.29159139923075056
                                                                                  - r2 * 3.0794530301731675)))
    big_q = r * (0.06944444444444445 - r2 * (0.03799305912780064 - r2 * (0.1160990640255154 - r2 * (
        0.8776669695100171 - r2 * 12.34157333234524))))
    phase = zn - 0.25 * _PI
    left = (libdevice.cos(phase) * big_p + libdevice.sin(phase) * big_q) / (
        libdevice.sqrt(_PI) * libdevice.sqrt(libdevice.sqrt(xn)))

    out = tl.where(mid, series, tl.where(x > 2.0, right, left))
    out = tl.where(x > 103.892, 0.0, out)
    return tl.where((tl.abs(x) == _INF) | (x != x), _nan(x), out)


# ----------------------------------------------------------------------------- normal quantile

@triton.jit
def ndtri(p):
    """x with Phi(x) = p. 0 -> -inf, 1 -> inf, outside [0, 1] -> nan."""
    central = libdevice.sqrt(2.0) * libdevice.erfinv(2.0 * p - 1.0)
    upper = p > 0.5
    q = tl.where(upper, 1.0 - p, p)
    q = tl.where((q > 0.0) & (q <= 0.5), q, 0.5)
    t = libdevice.sqrt(-2.0 * libdevice.log(q))
    # lower-tail first guess (within 5e-4), then Halley steps on Phi(x) - q
    z = -(t - (2.515517 + t * (0.802853 + t * 0.010328)) / (1.0 + t * (1.432788 + t * (0.189269 + t * 0.001308))))
    for _ in tl.static_range(2):
        phi = libdevice.exp(-0.5 * z * z) * 0.3989422804014327
        u = (0.5 * libdevice.erfc(-z * 0.7071067811865476) - q) / phi
        z = z - u / (1.0 + 0.5 * z * u)
    tail = tl.where(upper, -z, z)
    out = tl.where(tl.abs(p - 0.5) <= 0.4, central, tail)
    out = tl.where((p < 0.0) | (p > 1.0) | (p != p), _nan(p), out)
    out = tl.where(p == 1.0, _INF, out)
    return tl.where(p == 0.0, -_INF, out)


# ----------------------------------------------------------------------------- incomplete gamma

@triton.jit
def _gamma_prefactor(a, x):
    """x^a e^-x / Gamma(a) for a, x > 0."""
    small = libdevice.exp(a * libdevice.log(x) - x - libdevice.lgamma(a))
    al = tl.where(a >= 10.0, a, 10.0)
    sigma = (x - al) / al
    r = 1.0 / al
    # Gamma(a) = sqrt(2 pi / a) (a/e)^a (1 + 1/(12a) + 1/(288a^2) - 139/(51840a^3) - 571/(2488320a^4))
    stirling = 1.0 + r * (1.0 / 12.0 + r * (1.0 / 288.0 + r * (-139.0 / 51840.0 + r * (-571.0 / 2488320.0))))
    large = libdevice.exp(al * (libdevice.log1p(sigma) - sigma)) * libdevice.sqrt(al / (2.0 * _PI)) / stirling
    return tl.where(a >= 10.0, large, small)


@triton.jit
def incomplete_gamma(a, x, UPPER: tl.constexpr):
    """P(a, x) (UPPER False) or Q(a, x) = 1 - P(a, x), eager's edge cases: x < 0 or a < 0 ->
    nan; a == 0 -> (x > 0: P 1, Q 0; else nan); x == 0 -> P 0, Q 1; a inf -> (x inf: nan; else
    P 0, Q 1); x inf -> P 1, Q 0."""
    a, x = tl.broadcast(a, x)
    ok = (a > 0.0) & (x > 0.0) & (a < _INF) & (x < _INF)
    aa = tl.where(ok, a, 1.0)
    xx = tl.where(ok, x, 1.0)
    use_series = xx < aa + 1.0
    pre = _gamma_prefactor(aa, xx)
    # P by its series: x^a e^-x / Gamma(a + 1) sum_k x^k / ((a+1)..(a+k))
    term = 1.0 / aa
    total = term
    ap = aa
    # Q by its continued fraction (modified Lentz)
    tiny = 1.0e-30
    bcf = xx + 1.0 - aa
    c = tl.full(x.shape, 1.0e30, x.dtype)
    d = 1.0 / bcf
    hcf = d
    i = 1
    active = ok
    while _any(active):
        ap += 1.0
        term = term * xx / ap
        total = tl.where(active & use_series, total + term, total)
        an = -i * (i - aa)
        bcf += 2.0
        d = an * d + bcf
        d = tl.where(tl.abs(d) < tiny, tiny, d)
        c = bcf + an / c
        c = tl.where(tl.abs(c) < tiny, tiny, c)
        d = 1.0 / d
        delta = d * c
        hcf = tl.where(active & ~use_series, hcf * delta, hcf)
        conv = tl.where(use_series, tl.abs(term) < tl.abs(total) * _EPS, tl.abs(delta - 1.0) < _EPS)
        i += 1
        active = active & ~conv & (i < 2000)
    p_series = pre * total
    q_cf = pre * hcf
    if UPPER:
        out = tl.where(use_series, 1.0 - p_series, q_cf)
        out = tl.where(x == _INF, 0.0, out)
        out = tl.where(a == _INF, tl.where(x == _INF, _nan(x), 1.0), out)
        out = tl.where(x == 0.0, 1.0, out)
        out = tl.where(a == 0.0, tl.where(x > 0.0, 0.0, _nan(x)), out)
    else:
        out = tl.where(use_series, p_series, 1.0 - q_cf)
        out = tl.where(x == _INF, 1.0, out)
        out = tl.where(a == _INF, tl.where(x == _INF, _nan(x), 0.0), out)
        out = tl.where(x == 0.0, 0.0, out)
        out = tl.where(a == 0.0, tl.where(x > 0.0, 1.0, _nan(x)), out)
    return tl.where((x < 0.0) | (a < 0.0) | (x != x) | (a != a), _nan(x), out)

