/*
 * Copyright (c) 2025-2026 The coll/offload authors. All rights reserved.
 * SPDX-License-Identifier: BSD-3-Clause
 */
/*
 * coll/offload — stand-in for a header that Open MPI's op.h includes but that
 * distributions' devel-header packages (Debian's libopenmpi-dev 4.1) omit. It is
 * searched after the real include directories (-idirafter), so a complete
 * installation's own header wins. op.h uses only the conversion below, in an
 * inline function this component never calls.
 */
#ifndef OFL_COMPAT_FINT_2_INT_H
#define OFL_COMPAT_FINT_2_INT_H

#ifndef OMPI_INT_2_FINT
#define OMPI_INT_2_FINT(a) ((MPI_Fint) (a))
#endif
#ifndef OMPI_FINT_2_INT
#define OMPI_FINT_2_INT(a) ((int) (a))
#endif

#endif
