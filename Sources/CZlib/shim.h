#ifndef WSLOAD_CZLIB_SHIM_H
#define WSLOAD_CZLIB_SHIM_H

#include <zlib.h>

// deflateInit2/inflateInit2 are macros over the *_ functions that take the version and struct size.
static inline int wsload_deflateInit2(z_streamp strm, int level, int windowBits, int memLevel) {
    return deflateInit2(strm, level, Z_DEFLATED, windowBits, memLevel, Z_DEFAULT_STRATEGY);
}

static inline int wsload_inflateInit2(z_streamp strm, int windowBits) { return inflateInit2(strm, windowBits); }

#endif
