"""Type stubs of the extension module (the bindings over the Rust crate)."""

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union, final

__all__: List[str] = ["ScanrtError", "__version__", "scan", "recipe_scan", "scan_takes", "summed_area_table",
                      "scan_out_of_core", "sort", "scan_across", "select", "synchronize", "dtypes", "xla_handlers",
                      "add_kernel_pack_dir", "Operator"]

# An array as the bindings take it (scanrt._arrays.describe): address, dtype name, shape,
# strides in elements, device (-1 for host memory).
_Description = Tuple[int, str, Tuple[int, ...], Tuple[int, ...], int]

__version__: str

class ScanrtError(RuntimeError):
    """A scanrt call failed on the device or the driver (the message names the status)."""

def scan(*, x: _Description, out: _Description, op: str, inclusive: bool = True, reverse: bool = False,
         initial: Any = None, deterministic: bool = False, stream: int, segments: Optional[_Description] = None,
         carry_in: Optional[_Description] = None, carry_out: Optional[_Description] = None,
         offsets: Optional[_Description] = None, axis: int = ..., keys: Optional[_Description] = None) -> None: ...
def scan_across(*, chunks: Sequence[_Description], outs: Sequence[_Description], op: str, inclusive: bool = True,
                reverse: bool = False, initial: Any = None, deterministic: bool = False, streams: Sequence[int],
                totals: Optional[Sequence[_Description]] = None) -> None: ...
def scan_out_of_core(*, x: _Description, out: _Description, op: str, inclusive: bool = True, reverse: bool = False,
                     initial: Any = None, device: int, chunk: int,
                     progress: Optional[Callable[[int, int], Any]] = None) -> None: ...
def scan_takes(input: str, output: str, op: str) -> bool: ...
def summed_area_table(*, x: _Description, out: _Description, op: str, inclusive: bool = True, reverse: bool = False,
                      deterministic: bool = False, stream: int) -> None: ...
def recipe_scan(*, recipe: str, inputs: Sequence[_Description], outputs: Sequence[_Description], row: int = 0,
                inclusive: bool = True, reverse: bool = False, initial: Optional[Union[int, float]] = None,
                deterministic: bool = False, stream: int, offsets: Optional[_Description] = None,
                carry_in: Optional[_Description] = None, carry_out: Optional[_Description] = None,
                axis: Optional[int] = None, segments: Optional[_Description] = None,
                keys: Optional[_Description] = None) -> None: ...
def sort(*, keys: _Description, keys_out: _Description, values: Optional[_Description] = None,
         values_out: Optional[_Description] = None, descending: bool = False, stream: int,
         bits: Tuple[int, Optional[int]] = ...) -> None: ...
def select(*, x: _Description, mask: Optional[_Description] = None, out: _Description,
           lengths: Optional[_Description] = None, count: _Description, rule: str, indices: bool = False,
           capacity: Optional[int] = None, stream: int, operand: Optional[Union[int, float]] = None,
           predicate: Optional[Tuple[str, str, Optional[Callable[[Any], Any]]]] = None,
           partition: Optional[str] = None, rejected: Optional[_Description] = None) -> None: ...
def synchronize(device: int, stream: int) -> None: ...
def dtypes() -> List[Tuple[str, int, str]]: ...
def xla_handlers() -> Dict[str, Dict[str, int]]: ...
def add_kernel_pack_dir(path: str) -> None: ...

@final
class Operator:
    def __new__(cls, *, name: str, source: str, state: str, state_size: int, state_align: int, combine: str,
                identity: bytes, load: Optional[Tuple[str, Sequence[str]]] = None,
                store: Optional[Tuple[str, Sequence[str]]] = None,
                host: Optional[Tuple[Callable[[bytes, bytes], bytes], Optional[Callable[..., bytes]],
                                     Optional[Callable[[bytes], Any]]]] = None) -> Operator: ...
    @property
    def name(self) -> str: ...
    def xla_handle(self) -> int: ...
    def scan(self, *, inputs: Sequence[_Description], outputs: Sequence[_Description], inclusive: bool = True,
             reverse: bool = False, initial: Optional[bytes] = None, deterministic: bool = False, stream: int,
             segments: Optional[_Description] = None,
             offsets: Optional[_Description] = None, carry_in: Optional[_Description] = None,
             carry_out: Optional[_Description] = None, axis: Optional[int] = None,
             keys: Optional[_Description] = None) -> None: ...
