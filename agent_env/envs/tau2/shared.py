"""The shared base made read-only: a change to one of its entities, at any depth, raises instead of reaching every
episode in the process.

Copy-on-write (`store.Table`) hands an episode the base's entities themselves until it changes one through
`Table.edit`. `share` guards that: once a domain's base is parsed, each of its models becomes an instance of a
read-only twin of its class (a subclass that refuses `setattr` and `delattr`), and each list and dict in it a
read-only one. Reading, dumping, comparing and copying behave as before; a copy (`model_copy`, `copy.deepcopy`,
which `Table.edit` makes) is of the original class, and the episode's own to change. Guarding costs a walk over the
base once per process (airline's: about 15 ms, beside about 100 ms to parse it) and nothing per read.
"""

from __future__ import annotations

import copy
import threading
import types
import typing
from collections.abc import Callable
from typing import Any, NoReturn

from pydantic import BaseModel


class SharedBaseError(TypeError):
    """A change to an entity of a domain's shared base, which every episode reads: change the episode's own copy.

    A bug in the domain's code, not agent_env's word to its caller: a tool that raises it fails as any tool's bug
    does (`ToolFailedError`, its traceback in the log)."""


_FIX = (
    "it belongs to the database every episode in this process starts from, so it is never changed in place. Change "
    "the episode's own copy, which Table.edit gives (`self.db.<table>.edit(key)`, then change what it returns), or "
    "put a new entity with Table.insert"
)


def _refused(what: str) -> NoReturn:
    raise SharedBaseError(f"{what}: {_FIX}")


class SharedList(list[Any]):
    """A list of the shared base: read as any list, changed by none; a copy of it is a plain list."""

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refused("a list inside an entity of the shared base cannot be changed")

    append = extend = insert = remove = pop = clear = sort = reverse = _refuse
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse

    def __copy__(self) -> list[Any]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        copied: list[Any] = []
        memo[id(self)] = copied
        copied.extend(copy.deepcopy(item, memo) for item in self)
        return copied

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        return (list, (list(self),))


class SharedDict(dict[Any, Any]):
    """A dict of the shared base: read as any dict, changed by none; a copy of it is a plain dict."""

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refused("a dict inside the shared base cannot be changed")

    __setitem__ = __delitem__ = __ior__ = pop = popitem = clear = update = setdefault = _refuse

    def __copy__(self) -> dict[Any, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[Any, Any]:
        copied: dict[Any, Any] = {}
        memo[id(self)] = copied
        for key, value in self.items():
            dict.__setitem__(copied, key, copy.deepcopy(value, memo))
        return copied

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        return (dict, (dict(self),))


def share(base: BaseModel) -> None:
    """Make `base` and everything in it read-only, in place (see the module docstring); sharing it again does
    nothing."""
    _shared(base)


def is_shared(value: Any) -> bool:
    """Whether `value` is a read-only part of a shared base."""
    return type(value) in _ORIGINALS or type(value) in (SharedList, SharedDict)


def original_class(model: type[BaseModel]) -> type[BaseModel]:
    """The class a shared entity's read-only twin stands for (a class that is no twin, itself)."""
    return _ORIGINALS.get(model, model)


def _shared(value: Any) -> Any:
    """`value` made read-only: a model in place, a list, dict or tuple as a read-only copy; anything else as is."""
    kind = type(value)
    if kind is list:
        return SharedList([_shared(item) for item in value])
    if kind is dict:
        return SharedDict({key: _shared(item) for key, item in value.items()})
    if kind is tuple:
        return tuple(_shared(item) for item in value)
    if isinstance(value, BaseModel):
        return _shared_model(value)
    return value


def _shared_model(model: BaseModel) -> BaseModel:
    plan = _PLANS.get(type(model))
    if plan is None:
        if type(model) in _ORIGINALS:  # shared already
            return model
        plan = _plan(type(model))
    twin, walkers = plan
    fields = model.__dict__
    for name, walk in walkers:
        item = fields.get(name)
        if item is not None:
            fields[name] = walk(item)
    _set_class(model, "__class__", twin)
    return model


_set_class = object.__setattr__
Walk = Callable[[Any], Any]
Plan = tuple[type[BaseModel], tuple[tuple[str, Walk], ...]]


def _plan(model: type[BaseModel]) -> Plan:
    """`model`'s twin, and how to make each of its fields read-only, from its annotation. Fields of text, numbers or
    None need nothing and are left out: walking by the annotations rather than by each value's type is what keeps
    sharing airline's base to a fraction of its parse."""
    planned = ((name, _walker(field.annotation)) for name, field in model.model_fields.items())
    walkers = tuple((name, walk) for name, walk in planned if walk is not None)
    plan = _PLANS[model] = (_twin(model), walkers)
    return plan


def _walker(annotation: Any) -> Walk | None:
    """What makes a value of `annotation` read-only; None for a value that needs nothing (text, a number, None)."""
    if annotation in _SCALARS:
        return None
    origin, arguments = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Literal:
        return None
    if origin is typing.Annotated:
        return _walker(arguments[0])
    if origin in (typing.Union, types.UnionType):
        if all(_walker(argument) is None for argument in arguments):
            return None
        models = all(argument is type(None) or _is_model(argument) for argument in arguments)
        return (
            _shared_model if models else _shared
        )  # a union of models (airline's dates): by each one's own plan
    if origin is list and len(arguments) == 1:
        return _list_walker(_walker(arguments[0]))
    if origin is dict and len(arguments) == 2:
        return _dict_walker(_walker(arguments[1]))
    if _is_model(annotation):
        return _shared_model
    return _shared  # Any, a tuple, a type not planned for: by each value's type


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _list_walker(item: Walk | None) -> Walk:
    if item is None:
        return SharedList
    return lambda value: SharedList([item(entry) if entry is not None else None for entry in value])


def _dict_walker(item: Walk | None) -> Walk:
    if item is None:
        return SharedDict
    return lambda value: SharedDict(
        {key: item(entry) if entry is not None else None for key, entry in value.items()}
    )


_SCALARS = frozenset({str, int, float, bool, type(None), bytes})
_PLANS: dict[type[BaseModel], Plan] = {}
_TWINS: dict[type[BaseModel], type[BaseModel]] = {}
_ORIGINALS: dict[type[BaseModel], type[BaseModel]] = {}
_twins_lock = threading.Lock()


def _twin(model: type[BaseModel]) -> type[BaseModel]:
    """The read-only twin of `model`: a subclass with its very schema, validator and serializer (inherited, not
    built again: `type.__new__` makes it without pydantic's class machinery), whose instances refuse changes."""
    found = _TWINS.get(model)
    if found is not None:
        return found
    with _twins_lock:
        found = _TWINS.get(model)
        if found is None:
            namespace = {
                "__slots__": (),  # the layout of `model`, so that an instance's class can be switched to it
                "__module__": model.__module__,
                "__qualname__": model.__qualname__,
                "__doc__": model.__doc__,
                "__setattr__": _refuse_setattr,
                "__delattr__": _refuse_delattr,
                "__copy__": _copied,
                "__deepcopy__": _deep_copied,
                "__reduce_ex__": _reduced,
                "__eq__": _equal,
                "__hash__": None,
            }
            found = type.__new__(type(model), model.__name__, (model,), namespace)
            _ORIGINALS[found] = model
            _TWINS[model] = found
        return found


def _refuse_setattr(self: BaseModel, name: str, value: Any) -> NoReturn:
    _refused(f"{original_class(type(self)).__name__}.{name} of an entity of the shared base cannot be set")


def _refuse_delattr(self: BaseModel, name: str) -> NoReturn:
    _refused(
        f"{original_class(type(self)).__name__}.{name} of an entity of the shared base cannot be deleted"
    )


def _as_original(copied: BaseModel, of: BaseModel) -> BaseModel:
    object.__setattr__(copied, "__class__", original_class(type(of)))
    return copied


def _copied(self: BaseModel) -> BaseModel:
    """A shallow copy, of the original class: its own fields to set (what it holds is still the base's)."""
    return _as_original(BaseModel.__copy__(self), self)


def _deep_copied(self: BaseModel, memo: dict[int, Any] | None = None) -> BaseModel:
    """A deep copy, of the original class all through: the episode's own, to change at any depth."""
    return _as_original(BaseModel.__deepcopy__(self, memo), self)


def _reduced(self: BaseModel, protocol: Any) -> tuple[Any, ...]:
    """Pickled as an entity of the original class, which unpickles anywhere (a twin is made per process)."""
    return (_unpickled, (original_class(type(self)), self.__getstate__()))


def _unpickled(model: type[BaseModel], state: dict[Any, Any]) -> BaseModel:
    made = model.__new__(model)
    made.__setstate__(state)
    return made


def _equal(self: BaseModel, other: Any) -> bool:
    """Equal as pydantic compares models: a shared entity and its copy are equal until the copy changes."""
    if not isinstance(other, BaseModel):
        return NotImplemented
    return (
        original_class(type(self)) is original_class(type(other))
        and self.__pydantic_private__ == other.__pydantic_private__
        and (self.__pydantic_extra__ or {}) == (other.__pydantic_extra__ or {})
        and self.__dict__ == other.__dict__
    )
