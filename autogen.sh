#!/bin/sh
# Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
# SPDX-License-Identifier: BSD-3-Clause
set -e
cd "$(dirname "$0")"
mkdir -p config
autoreconf -fi
