"""Open a parquet file without trusting what it says about itself.

A file from a pull request can be small on disk and huge once decoded (a page header claims gigabytes,
one dictionary string repeats in every row). So every claim is checked against limits, cheapest first:
the footer's length, the footer, every page header as read from the bytes (Thrift compact protocol),
then the strings a batch at a time. Only then is the table read.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from benchmark.errors import human_size

Buffer: TypeAlias = bytes | mmap.mmap
MAGIC = b"PAR1"
MiB = 1 << 20


@dataclass(frozen=True)
class ParquetLimits:
    """The most a table of one kind may hold."""

    rows: int
    row_groups: int
    footer_bytes: int
    decoded_bytes: int
    """bytes of all pages once decompressed, and of all string values once decoded (each bounded)."""
    value_bytes: int
    """bytes of the longest string value (a response)."""


# A records file holds one row per (item, variant) run: the paper profile's 16 items x ~100 variants is
# under 2,000 rows, written as one row group, decoding to well under 1 MiB; responses are at most a few
# hundred tokens. The limits leave an order of magnitude and more.
TABLE_LIMITS = ParquetLimits(
    rows=50_000, row_groups=64, footer_bytes=1 * MiB, decoded_bytes=256 * MiB, value_bytes=64 * 1024
)


class TooBig(Exception):
    """A limit a file breaks, in words (the caller adds the file and the fix)."""


def checked_table(path: Path, columns: Sequence[str], limits: ParquetLimits = TABLE_LIMITS) -> pa.Table:
    """The table of ``path`` once its columns are exactly ``columns`` and every limit holds (else
    :class:`TooBig`; unreadable parquet raises pyarrow's or the OS's error)."""
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size < 12:
            raise TooBig("does not load as parquet (shorter than 12 bytes)")
        # the page headers are read from a map of the file: only the bytes looked at are paged in
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            _check_footer_length(data, size, limits)
            parquet = pq.ParquetFile(path)
            metadata, schema = parquet.metadata, parquet.schema_arrow
            _check_shape(metadata, schema, columns, limits)
            _check_stated_sizes(metadata, limits)
            _check_pages(data, metadata, limits)
    _check_strings(path, [f.name for f in schema if _is_text(f.type)], limits)
    return pq.read_table(path)


def _is_text(kind: pa.DataType) -> bool:
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return kind in (pa.string(), pa.large_string(), pa.binary(), pa.large_binary())


def _check_footer_length(data: Buffer, size: int, limits: ParquetLimits) -> None:
    if data[:4] != MAGIC or data[size - 4 : size] != MAGIC:
        raise TooBig("does not load as parquet (no PAR1 magic at both ends)")
    footer = int.from_bytes(data[size - 8 : size - 4], "little")
    if footer > limits.footer_bytes:
        raise TooBig(f"has a {human_size(footer)} footer, over the {human_size(limits.footer_bytes)} limit")
    if footer + 12 > size:
        raise TooBig("does not load as parquet (its footer is longer than the file)")


def _check_shape(
    metadata: pq.FileMetaData, schema: pa.Schema, columns: Sequence[str], limits: ParquetLimits
) -> None:
    if metadata.num_row_groups > limits.row_groups:
        raise TooBig(f"has {metadata.num_row_groups} row groups, over the limit of {limits.row_groups}")
    if metadata.num_rows > limits.rows:
        raise TooBig(f"has {metadata.num_rows} rows, over the limit of {limits.rows}")
    names = schema.names
    missing = [c for c in columns if c not in names]
    extra = [c for c in names if c not in columns]
    details = [f"missing {_some(missing)}"] if missing else []
    details += [f"unexpected {_some(extra)}"] if extra else []
    if details:
        raise TooBig(f"wrong columns ({'; '.join(details)})")
    nested = [f.name for f in schema if pa.types.is_nested(f.type)]
    if nested or metadata.num_columns != len(columns):
        raise TooBig(f"column {(nested or ['?'])[0]} is nested, not a plain value per row")


def _some(names: list[str], shown: int = 5) -> str:
    """A few names, each cut to 40 characters, and how many more.

    >>> _some(["a", "b"]), _some([str(i) for i in range(8)], shown=3)
    ('a, b', '0, 1, 2 and 5 more')
    """
    listed = ", ".join(name[:40] for name in names[:shown])
    return listed + (f" and {len(names) - shown} more" if len(names) > shown else "")


def _check_stated_sizes(metadata: pq.FileMetaData, limits: ParquetLimits) -> None:
    """What the footer says the pages decode to (an honest writer's file is refused here, undecoded)."""
    stated = sum(
        metadata.row_group(g).column(c).total_uncompressed_size
        for g in range(metadata.num_row_groups)
        for c in range(metadata.num_columns)
    )
    if stated > limits.decoded_bytes:
        raise TooBig(
            f"decodes to {human_size(stated)} by its own metadata, over the "
            f"{human_size(limits.decoded_bytes)} limit"
        )


def _check_pages(data: Buffer, metadata: pq.FileMetaData, limits: ParquetLimits) -> None:
    """Every page header of every column chunk, read from the bytes: the pages tile each chunk, and what
    they decompress to stays within the limit (the footer's sizes are not trusted)."""
    total = 0
    for g in range(metadata.num_row_groups):
        for c in range(metadata.num_columns):
            chunk = metadata.row_group(g).column(c)
            start = chunk.dictionary_page_offset if chunk.has_dictionary_page else chunk.data_page_offset
            length = chunk.total_compressed_size
            if start is None or length is None or start < 4 or length < 0 or start + length > len(data) - 8:
                raise TooBig("has a column chunk outside the file")
            end = start + length
            for uncompressed in _page_sizes(data, start, end):
                total += uncompressed
                if total > limits.decoded_bytes:
                    raise TooBig(
                        f"has pages that decompress to more than {human_size(limits.decoded_bytes)} "
                        "(the limit), whatever its metadata says"
                    )


def _page_sizes(data: Buffer, start: int, end: int) -> Iterator[int]:
    position = start
    while position < end:
        fields, position = _read_struct(data, position, end, depth=0)
        uncompressed, compressed = fields.get(2), fields.get(3)
        if uncompressed is None or compressed is None or uncompressed < 0 or compressed < 0:
            raise TooBig("has a page header without its sizes")
        position += compressed
        yield uncompressed
    if position != end:
        raise TooBig("has pages that do not tile their column chunk")


# Thrift compact protocol: just enough to walk a struct and keep its top-level integer fields.
_STOP, _TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT = range(13)
_MAX_DEPTH = 8
_FIXED_SIZE = {_TRUE: 0, _FALSE: 0, _BYTE: 1, _DOUBLE: 8}
"""bytes of a value of a fixed-size kind (``_TRUE``/``_FALSE`` as a field carry no payload)."""


def _byte(data: Buffer, position: int, end: int) -> tuple[int, int]:
    """The byte at ``position`` and the position after it (a header cut short is malformed)."""
    if position >= end:
        raise TooBig("has a malformed page header")
    return data[position], position + 1


def _varint(data: Buffer, position: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if position >= end or shift > 63:
            raise TooBig("has a malformed page header")
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, position


def _zigzag(value: int) -> int:
    return (value >> 1) ^ -(value & 1)


def _read_struct(data: Buffer, position: int, end: int, depth: int) -> tuple[dict[int, int], int]:
    """A struct at ``position``: its integer fields by id, and the position after it."""
    if depth > _MAX_DEPTH:
        raise TooBig("has a page header nested too deeply")
    fields: dict[int, int] = {}
    field_id = 0
    while True:
        head, position = _byte(data, position, end)
        kind = head & 0x0F
        if kind == _STOP:
            return fields, position
        if head >> 4:
            field_id += head >> 4
        else:
            raw, position = _varint(data, position, end)
            field_id = _zigzag(raw)
        if kind in (_I16, _I32, _I64):
            raw, position = _varint(data, position, end)
            fields[field_id] = _zigzag(raw)
        else:
            position = _skip(data, position, end, kind, depth)


def _skip(data: Buffer, position: int, end: int, kind: int, depth: int) -> int:
    """The position after one value of ``kind``."""
    if kind in _FIXED_SIZE:
        return position + _FIXED_SIZE[kind]
    if kind in (_I16, _I32, _I64):
        return _varint(data, position, end)[1]
    if kind == _BINARY:
        length, position = _varint(data, position, end)
        return position + length
    if kind == _STRUCT:
        return _read_struct(data, position, end, depth + 1)[1]
    if kind in (_LIST, _SET):
        head, position = _byte(data, position, end)
        count, element = head >> 4, head & 0x0F
        if count == 15:
            count, position = _varint(data, position, end)
        return _skip_many(data, position, end, [element] * min(count, end - position + 1), depth, count)
    if kind == _MAP:
        count, position = _varint(data, position, end)
        if count == 0:
            return position
        pair, position = _byte(data, position, end)
        kinds = [pair >> 4, pair & 0x0F] * min(count, end - position + 1)
        return _skip_many(data, position, end, kinds, depth, 2 * count)
    raise TooBig("has a malformed page header")


def _skip_many(data: Buffer, position: int, end: int, kinds: list[int], depth: int, count: int) -> int:
    if count > len(kinds):
        raise TooBig("has a malformed page header")
    for kind in kinds:
        # a boolean inside a list is one byte, unlike a boolean field
        position = position + 1 if kind in (_TRUE, _FALSE) else _skip(data, position, end, kind, depth + 1)
        if position > end:
            raise TooBig("has a malformed page header")
    return position


def _check_strings(path: Path, columns: list[str], limits: ParquetLimits) -> None:
    """Decode the string columns as dictionaries, a batch at a time: their decoded total and longest value
    are known before anything is materialised (a dictionary value repeated in every row counts each time)."""
    if not columns:
        return
    parquet = pq.ParquetFile(path, read_dictionary=columns)
    total = 0
    for batch in parquet.iter_batches(batch_size=4096, columns=columns, use_threads=False):
        for array in batch.columns:
            lengths, longest = _lengths(array)
            total += lengths
            if longest > limits.value_bytes:
                raise TooBig(
                    f"holds a {human_size(longest)} string value, "
                    f"over the {human_size(limits.value_bytes)} limit"
                )
            if total > limits.decoded_bytes:
                raise TooBig(
                    "has string values that decode to more than "
                    f"{human_size(limits.decoded_bytes)} (the limit)"
                )


def _lengths(array: pa.Array) -> tuple[int, int]:
    if isinstance(array, pa.DictionaryArray):
        sizes = pc.binary_length(array.dictionary)
        per_row = pc.take(sizes, array.indices)
    else:
        per_row = pc.binary_length(array)
    total, longest = pc.sum(per_row).as_py(), pc.max(per_row).as_py()
    return int(total or 0), int(longest or 0)
