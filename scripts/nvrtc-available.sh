#!/usr/bin/env bash
# Exits 0 when NVRTC can be loaded here (the fake-driver checks need it to
# compile the kernels), 1 when it cannot.
ldconfig -p 2>/dev/null | grep -q 'libnvrtc\.so' || [ -e /usr/local/cuda/lib64/libnvrtc.so ]
