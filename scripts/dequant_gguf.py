#!/usr/bin/env python3
"""Dev only: rewrites a GGUF file with every tensor dequantised to f32 by the `gguf` PyPI package,
metadata unchanged (except general.file_type). llama.cpp run on this file computes on the same
f32 weights as deltalogic and the numpy reference, without quantising its activations (which it
does for quantised matmuls), so the comparison isolates the transformer arithmetic.

Usage: dequant_gguf.py IN.gguf OUT.gguf
"""

import sys

import numpy as np
from gguf import GGUFReader, GGUFValueType, GGUFWriter
from gguf.quants import dequantize

src, dst = sys.argv[1], sys.argv[2]
r = GGUFReader(src)
arch = r.fields["general.architecture"].contents()
w = GGUFWriter(dst, arch)
for key, f in r.fields.items():
    if key.startswith("GGUF.") or key == "general.architecture":
        continue
    value = 0 if key == "general.file_type" else f.contents()
    sub = f.types[1] if len(f.types) > 1 and f.types[0] == GGUFValueType.ARRAY else None
    w.add_key_value(key, value, f.types[0], sub_type=sub)
for t in r.tensors:
    a = dequantize(t.data, t.tensor_type).astype(np.float32)
    w.add_tensor(t.name, a.reshape([int(x) for x in reversed(t.shape)]))
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
