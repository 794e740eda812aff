"""Type stubs of the extension module (the bindings over the Rust crate)."""

from typing import Any, Callable, Optional, Sequence, Tuple, Union

Description = Tuple[int, str, Tuple[int, ...], Tuple[int, ...], int]

__version__: str

class ScanrtError(RuntimeError):
    """A scanrt call failed on the device or the driver (the message names the status)."""

def scan(x: Description, out: Description, op: str, inclusive: bool, reverse: bool, initial: Any,
         deterministic: bool, stream: int, segments: Optional[Description] = None,
         carry_in: Optional[Description] = None, carry_out: Optional[Description] = None,
         offsets: Optional[Description] = None, axis: int = -1, keys: Optional[Description] = None) -> None: ...
def scan_across(chunks: Sequence[Description], outs: Sequence[Description], op: str, inclusive: bool, reverse: bool,
                initial: Any, deterministic: bool, streams: Sequence[int],
                totals: Optional[Sequence[Description]] = None) -> None: ...
def scan_out_of_core(x: Description, out: Description, op: str, inclusive: bool, reverse: bool, initial: Any,
                     device: int, chunk: int, progress: Optional[Callable[[int, int], Any]] = None) -> None: ...
def scan_takes(input: str, output: str, op: str) -> bool: ...
def recipe_scan(recipe: str, inputs: Sequence[Description], outputs: Sequence[Description], row: int,
                inclusive: bool, reverse: bool, initial: Optional[Union[int, float]], deterministic: bool,
                stream: int, offsets: Optional[Description] = None, carry_in: Optional[Description] = None,
                carry_out: Optional[Description] = None, axis: Optional[int] = None,
                segments: Optional[Description] = None, keys: Optional[Description] = None) -> None: ...
def sort(keys: Description, keys_out: Description, values: Optional[Description], values_out: Optional[Description],
         descending: bool, stream: int, bits: Tuple[int, Optional[int]] = (0, None)) -> None: ...
def select(x: Description, mask: Optional[Description], out: Description, lengths: Optional[Description],
           count: Description, rule: str, indices: bool, capacity: Optional[int], stream: int,
           operand: Optional[Union[int, float]] = None,
           predicate: Optional[Tuple[str, str, Optional[Callable[[Any], Any]]]] = None,
           partition: Optional[str] = None, rejected: Optional[Description] = None) -> None: ...
def synchronize(device: int, stream: int) -> None: ...

class Operator:
    def __init__(self, name: str, source: str, state: str, state_size: int, state_align: int, combine: str,
                 identity: bytes, load: Optional[Tuple[str, Sequence[str]]] = None,
                 store: Optional[Tuple[str, Sequence[str]]] = None,
                 host: Optional[Tuple[Callable[[bytes, bytes], bytes], Optional[Callable[..., bytes]],
                                      Optional[Callable[[bytes], Any]]]] = None) -> None: ...
    @property
    def name(self) -> str: ...
    def scan(self, inputs: Sequence[Description], outputs: Sequence[Description], inclusive: bool, reverse: bool,
             initial: Optional[bytes], deterministic: bool, stream: int, segments: Optional[Description] = None,
             offsets: Optional[Description] = None, carry_in: Optional[Description] = None,
             carry_out: Optional[Description] = None, axis: Optional[int] = None) -> None: ...
