# -*- shell-script -*-
# Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
# SPDX-License-Identifier: BSD-3-Clause
#
# coll/offload inside an Open MPI source tree: built when the libfabric header
# is there (the ofi backend is compiled always and loads libfabric at run time)
# and the compiler has C11 atomics (the engine's counters).

# MCA_ompi_coll_offload_CONFIG([action-if-can-compile], [action-if-cant-compile])
AC_DEFUN([MCA_ompi_coll_offload_CONFIG],[
    AC_CONFIG_FILES([ompi/mca/coll/offload/Makefile])
    coll_offload_happy=yes

    AC_CHECK_HEADER([rdma/fabric.h], [],
        [AC_MSG_WARN([coll/offload needs rdma/fabric.h (Debian: libfabric-dev)])
         coll_offload_happy=no])
    AC_CHECK_HEADER([stdatomic.h], [],
        [AC_MSG_WARN([coll/offload needs C11 atomics (stdatomic.h)])
         coll_offload_happy=no])

    # The ALU's loops want GCC's vectoriser at full strength; compilers that
    # reject these flags vectorise at -O3 by themselves.
    coll_offload_VECT_CFLAGS=
    coll_offload_save_CFLAGS=$CFLAGS
    for coll_offload_flag in -ftree-loop-vectorize -fvect-cost-model=dynamic; do
        AC_MSG_CHECKING([whether $CC accepts $coll_offload_flag])
        CFLAGS="$coll_offload_save_CFLAGS $coll_offload_flag"
        AC_COMPILE_IFELSE([AC_LANG_PROGRAM([], [])],
            [AC_MSG_RESULT([yes])
             coll_offload_VECT_CFLAGS="$coll_offload_VECT_CFLAGS $coll_offload_flag"],
            [AC_MSG_RESULT([no])])
    done
    CFLAGS=$coll_offload_save_CFLAGS
    AC_SUBST([coll_offload_VECT_CFLAGS])
    AC_SUBST([coll_offload_CPPFLAGS])

    AS_IF([test "$coll_offload_happy" = yes], [$1], [$2])
])dnl
