// libFuzzer's driver entry point (compiler-rt, LLVM 11+). Linking with -sanitize=fuzzer supplies it.
// The fuzz targets call it from their own main: SwiftPM renames an executable's entry point and points
// `main` at it, so libFuzzer's own main cannot be used.
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
