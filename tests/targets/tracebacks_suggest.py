# tracebacks_suggest - the 3.x scenarios of tracebacks.py whose exception line may end in what
# 3.12+'s traceback module adds: "Did you mean: 'x'?" for NameError (a typo of a local, a global,
# a builtin; `self.x` inside a method; ties; a name longer than 40 characters; more than 750
# candidates; a stdlib module not imported), AttributeError (an instance's, a class's, a
# module's attribute; names with and without a leading underscore; a method's own `self`) and
# `from m import nme`, and 3.15's hints for other languages' method names. Older versions add
# nothing: the same scenarios check that nothing is added. `park` is set by tracebacks.py.
# This module imports no standard module by a name the scenarios misspell or forget.

import sys
import traceback

park = None

GLOBAL_SETTING = 3
tim = 1  # close to "time", a module this file does not import
a_very_long_variable_name_that_goes_on_and_on_x = 7


def call(f, *args):
    return f(*args)


def local_typo():
    counter_value = 1
    return counter_valeu  # noqa: F821


def global_typo():
    return GLOBAL_SETING  # noqa: F821


def builtin_typo():
    return lenn([])  # noqa: F821


def unrelated_name():
    return zqxjw_nothing_like_it  # noqa: F821


def stdlib_forgotten():
    return collections.OrderedDict()  # noqa: F821


def stdlib_and_close():
    return time.time()  # noqa: F821


def long_name():
    return a_very_long_variable_name_that_goes_on_and_on_y  # noqa: F821


def tie():
    valy = 1
    valx = 2
    return valy + valx + valz  # noqa: F821


MANY = dict(("many_%d" % i, i) for i in range(800))
MANY["target_name"] = 1
exec("def many_candidates():\n    return target_nme\n", MANY)


class Scale(object):
    def __init__(self):
        self.weight = 5
        self._secret = 1
        self.public = 2

    def forgot_self(self):
        return weight  # noqa: F821

    def own_underscore(self):
        return self.secret


class Thing(object):
    kind = "thing"

    def __init__(self):
        self.color = "red"
        self._private_thing = 1

    def method(self):
        return 1


def attr_instance():
    return Thing().colour


def attr_class():
    return Thing.methd


def attr_module():
    import os
    return os.pathh


def attr_underscored():
    return Thing()._private_thinh


def attr_hidden():
    return Thing().private_thing


def attr_nothing_close():
    return Thing().zqxjw


def import_from():
    from json import dumsp  # noqa: F401


def import_dotted():
    from xml.dom import minidomm  # noqa: F401


def cross_language():
    return [].push(1)


class Bag(dict):
    pass


class Slotted(object):
    __slots__ = ("value", "other")

    def __init__(self):
        self.value = 1


class SlottedMethods(object):
    # hasattr(self, name) of a slot: set ("weight") or not ("height")
    __slots__ = ("weight", "height")

    def __init__(self):
        self.weight = 1

    def forgot_set(self):
        return weight  # noqa: F821

    def forgot_unset(self):
        return height  # noqa: F821


class Limits(object):
    # hasattr(self, name) of a class attribute: a plain value, a class
    limit = 10

    class Config(object):
        pass

    def forgot_constant(self):
        return limit  # noqa: F821

    def forgot_class(self):
        return Config  # noqa: F821


class Dynamic(object):
    def __init__(self):
        self.colour = 1

    def __getattr__(self, name):
        if sys.version_info < (3, 10):  # (no name= nor obj= before 3.10)
            raise AttributeError("no %s here" % name)
        raise AttributeError("no %s here" % name, name=name, obj=self)


class OwnDir(object):
    # dir() runs this: pyunwind cannot, and makes no suggestion
    def __init__(self):
        self.value = 1

    def __dir__(self):
        return ["value", "valeu_from_dir"]


class Weighed(object):
    # hasattr(self, "weight") runs the property: pyunwind cannot, and makes no suggestion
    @property
    def weight(self):
        return 5

    def forgot_self(self):
        return weight  # noqa: F821


class CustomStr(Exception):
    def __str__(self):
        return "made by Python code"


def str_builtin():
    return "abc".uper()


def list_builtin():
    return [].apend(1)


def int_builtin():
    return (1).bit_lenght()


def dict_subclass():
    return Bag().gett("x")


def slots():
    return Slotted().valeu


def getattr_hook():
    return Dynamic().color


def own_dir():
    return OwnDir().valeu


def unicode_local():
    café = 1
    return cafe  # noqa: F821


def custom_str():
    raise CustomStr("args")


def comprehension():
    return [item_value for item_value in [1] if item_valeu]  # noqa: F821


def generator():
    gen_local = 1
    yield gen_locl  # noqa: F821


def same_frame():
    # the frame that raised is the one handling: its locals as they are when printed
    frame_local = 1
    try:
        return frame_locl  # noqa: F821
    except NameError:
        park()
    return frame_local


MODULE_CODE = compile("module_level_value = 1\nmodule_level_valeu\n", "<module code>", "exec")


def module_level():
    exec(MODULE_CODE, {})


def class_body():
    class Body(object):
        body_value = 1
        body_valeu  # noqa: F821
    return Body


def import_stdlib():
    from collections import OrderedDik  # noqa: F401


def enum_member():
    import enum
    Color = enum.Enum("Color", "RED GREEN")
    return Color.REDD


def chained():
    # the suggestion of an exception further up the chain
    try:
        local_typo()
    except NameError:
        raise ValueError("while looking")


def nested_closure():
    outer_value = 1

    def inner():
        return outer_valeu + outer_value  # noqa: F821
    return inner()


async def coroutine_typo():
    coro_local = 1
    return coro_locl  # noqa: F821


def run_coroutine():
    c = coroutine_typo()
    try:
        c.send(None)
    finally:
        c.close()


class Inner(object):
    def __init__(self):
        self.value = 1


class Outer(object):
    # 3.15 finds .inner.value and .items.append one attribute deeper; a property is not run
    def __init__(self):
        self.inner = Inner()
        self.items = []

    @property
    def conf(self):
        return Inner()


class OnlyProperty(object):
    @property
    def conf(self):
        return Inner()


def nested_attribute():
    return Outer().value


def nested_builtin():
    return Outer().append


def nested_property():
    return OnlyProperty().value


def without_suggestion(kind, value, tb):
    """The text with no suggestion: format_exception with the exception's name unset."""
    if not hasattr(value, "name"):  # (before 3.10)
        return "".join(traceback.format_exception(kind, value, tb))
    name = value.name
    value.name = None
    try:
        return "".join(traceback.format_exception(kind, value, tb))
    finally:
        value.name = name


def str_not_shown(kind, value, tb):
    lines = "".join(traceback.format_exception(kind, value, tb)).splitlines(True)
    lines[-1] = (lines[-1].split(":")[0] +
                 ": <str() not shown: a class written in Python defines __str__>\n")
    return "".join(lines)


def scenario(kind, f, *args, **kw):
    def run():
        try:
            f(*args)
        except kind:
            park(**kw)
    return run


SCENARIOS = [
    ("s_local", scenario(NameError, local_typo), ()),
    ("s_global", scenario(NameError, global_typo), ()),
    ("s_builtin", scenario(NameError, builtin_typo), ()),
    ("s_unrelated", scenario(NameError, unrelated_name), ()),
    ("s_stdlib", scenario(NameError, stdlib_forgotten), ()),
    ("s_stdlibclose", scenario(NameError, stdlib_and_close), ()),
    ("s_long", scenario(NameError, long_name), ()),
    ("s_tie", scenario(NameError, tie), ()),
    ("s_many", scenario(NameError, call, MANY["many_candidates"]), ()),
    ("s_self", scenario(NameError, Scale().forgot_self), ()),
    ("s_selfunder", scenario(AttributeError, Scale().own_underscore), ()),
    ("s_instance", scenario(AttributeError, attr_instance), ()),
    ("s_class", scenario(AttributeError, attr_class), ()),
    ("s_module", scenario(AttributeError, attr_module), ()),
    ("s_underscored", scenario(AttributeError, attr_underscored), ()),
    ("s_hidden", scenario(AttributeError, attr_hidden), ()),
    ("s_noattr", scenario(AttributeError, attr_nothing_close), ()),
    ("s_import", scenario(ImportError, import_from), ()),
    ("s_dotted", scenario(ImportError, import_dotted), ()),
    ("s_crosslang", scenario(AttributeError, cross_language), ()),
    ("s_str", scenario(AttributeError, str_builtin), ()),
    ("s_list", scenario(AttributeError, list_builtin), ()),
    ("s_int", scenario(AttributeError, int_builtin), ()),
    ("s_subclass", scenario(AttributeError, dict_subclass), ()),
    ("s_slots", scenario(AttributeError, slots), ()),
    ("s_getattr", scenario(AttributeError, getattr_hook), ()),
    ("s_unicode", scenario(NameError, unicode_local), ()),
    ("s_comprehension", scenario(NameError, comprehension), ()),
    ("s_generator", scenario(NameError, call, lambda: next(generator())), ()),
    ("s_sameframe", same_frame, ()),
    ("s_modulelevel", scenario(NameError, module_level), ()),
    ("s_classbody", scenario(NameError, class_body), ()),
    ("s_importstd", scenario(ImportError, import_stdlib), ()),
    ("s_enum", scenario(AttributeError, enum_member, expect=without_suggestion), ()),
    ("s_chained", scenario(ValueError, chained), ()),
    ("s_closure", scenario(NameError, nested_closure), ()),
    ("s_coroutine", scenario(NameError, run_coroutine), ()),
    ("s_nested", scenario(AttributeError, nested_attribute), ()),
    ("s_nestedbuiltin", scenario(AttributeError, nested_builtin), ()),
    ("s_nestedprop", scenario(AttributeError, nested_property), ()),
    ("s_slotset", scenario(NameError, SlottedMethods().forgot_set), ()),
    ("s_slotunset", scenario(NameError, SlottedMethods().forgot_unset), ()),
    ("s_classconst", scenario(NameError, Limits().forgot_constant), ()),
    ("s_classclass", scenario(NameError, Limits().forgot_class), ()),
    ("s_owndir", scenario(AttributeError, own_dir, expect=without_suggestion), ()),
    ("s_property", scenario(NameError, Weighed().forgot_self, expect=without_suggestion), ()),
    ("s_customstr", scenario(CustomStr, custom_str, expect=str_not_shown), ()),
]
