# The fuzz entry functions (tests/fuzz/fuzz_entries.h): their source, and the static libraries of the
# torch_expr frontend's tracer (without its plugin entry point, so the frontend target traces
# programs without loading a plugin) and of the hf frontend's config.json reader. Used by the
# libFuzzer targets (tests/fuzz/CMakeLists.txt, TESSERA_FUZZ=ON) and by the regression replay in
# the test binary (tests/CMakeLists.txt).
set(TESSERA_FUZZ_ENTRY_SOURCES ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_entries.cpp)
set(TESSERA_FUZZ_ENTRY_LIBRARIES torch_expr_tracer hf_model_config)
set(TESSERA_FUZZ_ENTRY_INCLUDE_DIRS ${CMAKE_SOURCE_DIR} ${CMAKE_SOURCE_DIR}/tests)
