#!/usr/bin/env python3
"""Independent reader of TensorBoard event files (test oracle for trainer/tb_writer.cpp).

Parses TFRecord framing (u64 length, masked CRC32C of the length bytes, data, masked CRC32C of the
data), verifies both CRCs with its own bit-by-bit CRC32C, and decodes the Event / Summary / Value
protobufs by hand. Prints JSON: {"file_version": str, "records": n,
"scalars": {tag: [[step, value, wall_time], ...]}}. Exits 1 with a message on any corruption.
Usage: read_tfevents.py EVENTS_FILE
"""
import json
import struct
import sys


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(crc: int) -> int:
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def varint(buf: bytes, pos: int):
    shift = result = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def fields(buf: bytes):
    """Yields (field number, wire type, value) of one protobuf message."""
    pos = 0
    while pos < len(buf):
        key, pos = varint(buf, pos)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = varint(buf, pos)
        elif wire == 1:
            value = buf[pos:pos + 8]
            pos += 8
        elif wire == 2:
            n, pos = varint(buf, pos)
            value = buf[pos:pos + n]
            pos += n
        elif wire == 5:
            value = buf[pos:pos + 4]
            pos += 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        if pos > len(buf):
            raise ValueError("truncated protobuf")
        yield field, wire, value


def read(path: str):
    out = {"file_version": None, "records": 0, "scalars": {}}
    data = open(path, "rb").read()
    pos = 0
    while pos < len(data):
        if pos + 12 > len(data):
            raise ValueError(f"truncated header at offset {pos}")
        header = data[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        (len_crc,) = struct.unpack("<I", data[pos + 8:pos + 12])
        if masked(crc32c(header)) != len_crc:
            raise ValueError(f"length CRC mismatch at offset {pos}")
        body = data[pos + 12:pos + 12 + length]
        (data_crc,) = struct.unpack("<I", data[pos + 12 + length:pos + 16 + length])
        if len(body) != length or masked(crc32c(body)) != data_crc:
            raise ValueError(f"data CRC mismatch at offset {pos}")
        pos += 16 + length
        out["records"] += 1
        wall_time, step = None, 0
        values = []
        for field, wire, value in fields(body):
            if field == 1 and wire == 1:
                (wall_time,) = struct.unpack("<d", value)
            elif field == 2 and wire == 0:
                step = value
            elif field == 3 and wire == 2:
                out["file_version"] = value.decode()
            elif field == 5 and wire == 2:
                for f2, w2, v in fields(value):
                    if f2 != 1 or w2 != 2:
                        continue
                    tag, simple = None, None
                    for f3, w3, x in fields(v):
                        if f3 == 1 and w3 == 2:
                            tag = x.decode()
                        elif f3 == 2 and w3 == 5:
                            (simple,) = struct.unpack("<f", x)
                    values.append((tag, simple))
        for tag, simple in values:
            out["scalars"].setdefault(tag, []).append([step, simple, wall_time])
    return out


if __name__ == "__main__":
    try:
        print(json.dumps(read(sys.argv[1])))
    except (ValueError, IndexError, struct.error) as e:
        print(f"corrupt event file {sys.argv[1]}: {e}", file=sys.stderr)
        sys.exit(1)
