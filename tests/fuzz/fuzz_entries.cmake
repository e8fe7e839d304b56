# The sources of the fuzz entry functions (tests/fuzz/fuzz_entries.h): the entries themselves and
# the torch_expr frontend without its plugin entry point, so that the frontend target traces
# programs without loading a plugin. Used by the libFuzzer targets (tests/fuzz/CMakeLists.txt,
# TESSERA_FUZZ=ON) and by the regression replay in the test binary (tests/CMakeLists.txt).
file(GLOB TESSERA_FUZZ_TORCH_EXPR_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/plugins/frontends/torch_expr/*.cpp)
list(FILTER TESSERA_FUZZ_TORCH_EXPR_SOURCES EXCLUDE REGEX "/torch_expr_frontend\\.cpp$")
list(SORT TESSERA_FUZZ_TORCH_EXPR_SOURCES)
# The hf frontend's config.json reader (hf_config target) is one self-contained file.
set(TESSERA_FUZZ_ENTRY_SOURCES ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_entries.cpp ${TESSERA_FUZZ_TORCH_EXPR_SOURCES}
    ${CMAKE_SOURCE_DIR}/plugins/frontends/hf/model_config.cpp)
set(TESSERA_FUZZ_ENTRY_INCLUDE_DIRS ${CMAKE_SOURCE_DIR} ${CMAKE_SOURCE_DIR}/tests)
