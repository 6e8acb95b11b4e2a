# corpus.py - expressions for the caret test (tests/carets/run): compiled, never run.
# Each instruction's position is rendered by every interpreter's traceback module and by
# pyunwind; they must agree. Syntax stays within what Python 3.11 reads.


def calls(f, g, obj, a, b, c, d, x, y):
    f()
    f(a)
    f(a, b, key=c)
    f (a)
    f(A())
    g(f(a), f(b))
    obj.meth(x)
    obj.attr.chain.meth(x, y)
    obj . meth ( x )
    (f)(a)
    (obj.meth)(a)
    f(a)(b)(c)
    f(x)[y](a)
    x = f(a)
    x = f(a)  # a comment
    x = obj.meth(a)
    x = y = f(a)
    x: int = f(a)
    x += f(a)
    return f(a)


def returns(f, obj, a):
    return obj.meth(a)


def returns2(f, a):
    return (f(a))


def binops(a, b, c, d, e):
    a + b
    a+b
    a  +  b
    a + b * c
    a * b + c
    (a + b) * c
    a * (b + c)
    a ** b ** c
    -a ** b
    -a * b
    ~a + b
    a // b
    a // b // c
    a @ b
    a % b
    a << b >> c
    a | b & c ^ d
    (a) + (b)
    ((a)) + ((b))
    (a
     ) + b
    a.b + c.d.e
    a[0] + b[1]
    f(a) + g(b)
    a + b if c else d
    a < b + c
    not a + b
    x = a + b
    x = (a) + (b)  # trailing comment
    return a + b


def subscripts(a, b, d, f, k):
    d[k]
    d["key"]
    d[ k ]
    d[k][0][1]
    d[1:2]
    d[1:]
    d[:]
    d[::2]
    d[1, 2]
    d[(k)]
    d[f(k)]
    f(k)[0]
    (d)[k]
    d  [k]
    d[k]  .x
    x = d[k]
    return d[k]["z"]


def multi_line(f, g, a, b, c, d):
    f(
        a,
        b,
    )
    x = f(
        a,
        b)
    return g(a,
             b)
    y = (a
         + b
         + c)
    z = (a +
         b)
    w = (a  # first
         *  # second
         b)
    v = a + \
        b
    u = d[
        a
    ]
    t = f(a)(
        b
    )
    s = f(
        a,
        b,
        c,
        d,
        a,
        b,
        c,
        d,
    )
    q = (
        a
        +
        b
    )
    r = f(g(
        a), b)
    p = f(a)[
        b]


def strings(f, d, a):
    f("a # b", 'c(d)')
    f("""x
y""", a)
    d["[" + a] + "]"
    f(f"{a!r:>{a}}") + a
    f(r"\d+(") + a
    f('x')[0]
    b"x" + a
    "a" "b" + a


def non_ascii(f, d, ünïcode, ä):
    ünïcode(ä) + ä
    ünïcode.métho(ä)
    d["ключ"] + d["значение"]
    x = d["ó"]["á"]["í"]["beta"]
    ä + ünïcode
    f("é") + f("è")
    return ünïcode(ä)


def wide(f, 数据, 函数):
    函数(数据) + 数据
    数据["键"][0] + 1
    x = 函数("参数")
    f("🐍🐍") + f("🐍")
    数据.属性.方法(数据)
    f("ｆｕｌｌ") * 2
    f("é") + f("é́")
    return 函数(数据) * 数据


def tabs(f, a, b, d):
	f(a)
	a	+	b
	d[	a	]
	x = f(a,	b)
	if a:
		f(a) + b


def trailing_space(f, a, b):
    f(a) + b   
    x = f(a)   
    f(a)	


class Klass:
    def method(self, a):
        return self.helper(a) + self.other[a]

    @property
    def prop(self):
        return self._x.y.z


lambda_value = lambda a, b: a + b * 2
comprehension = [x * 2 for x in range(3) if x % 2]
dict_comp = {k: v + 1 for k, v in {}.items()}
gen = (x ** 2 for x in range(3))
top_call = print
top_call("module level") if False else None
assert_value = 1 + 2
last_line_without_newline = top_call(assert_value) + 0