#!/usr/bin/env python3
"""Draws the kernel logos (logo-32x32.png, logo-64x64.png) with the standard library only.

The picture is ixmap's subject: a 4x4 tile whose cells are coloured by the thread that
reads them under a transpose, (d0, d1) -> (d1, d0), in the palette the plots use
(src/render/svg.rs). Run it from anywhere: python3 kernel/make-logos.py
"""
import os
import struct
import zlib

PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728"]


def rgb(h):
    return tuple(int(h[i:i + 2], 16) for i in (1, 3, 5))


def png(width, height, pixels):
    """pixels: rows of (r, g, b, a) tuples."""
    raw = b"".join(b"\x00" + b"".join(struct.pack("4B", *p) for p in row) for row in pixels)

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def logo(size):
    cells = 4
    gap = max(1, size // 32)
    margin = size // 16
    cell = (size - 2 * margin - (cells - 1) * gap) // cells
    used = cells * cell + (cells - 1) * gap
    off = (size - used) // 2
    rows = []
    for y in range(size):
        row = []
        for x in range(size):
            cx, cy = x - off, y - off
            inside = 0 <= cx < used and 0 <= cy < used
            i, j = cy // (cell + gap), cx // (cell + gap)
            on_cell = inside and cx % (cell + gap) < cell and cy % (cell + gap) < cell
            if on_cell:
                # Transposed read: element (i, j) is read by thread j, so columns share colours,
                # and the diagonal (read in place) is drawn darker.
                r, g, b = rgb(PALETTE[j % len(PALETTE)])
                if i == j:
                    r, g, b = (r * 3 // 5, g * 3 // 5, b * 3 // 5)
                row.append((r, g, b, 255))
            else:
                row.append((255, 255, 255, 0))
        rows.append(row)
    return png(size, size, rows)


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    for size in (32, 64):
        with open(os.path.join(here, f"logo-{size}x{size}.png"), "wb") as f:
            f.write(logo(size))
