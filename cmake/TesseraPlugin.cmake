# tessera_add_plugin(<name> SOURCES <files...> [LIBRARIES <libs...>])
# Builds a Tessera plugin: a MODULE library linked against libtessera, placed in the plugin
# directory of the build tree and installed into the plugin directory of the install tree.
# The same function is exported with the installed framework for out-of-tree plugins.
function(tessera_add_plugin name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBRARIES" ${ARGN})
  add_library(${name} MODULE ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE Tessera::tessera ${ARG_LIBRARIES})
  set_target_properties(${name} PROPERTIES
    PREFIX "lib"
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    # Installed plugins live in <libdir>/tessera/plugins: libtessera is two levels up.
    INSTALL_RPATH "$ORIGIN/../..")
  if(DEFINED TESSERA_PLUGIN_OUTPUT_DIR)
    set_target_properties(${name} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${TESSERA_PLUGIN_OUTPUT_DIR})
  endif()
  set_property(GLOBAL APPEND PROPERTY TESSERA_PLUGIN_TARGETS ${name})
  # In-tree clang builds share one precompiled header across the plugins (framework/CMakeLists.txt).
  if(TARGET tessera_plugin_prelude)
    target_precompile_headers(${name} REUSE_FROM tessera_plugin_prelude)
  endif()
  if(DEFINED TESSERA_PLUGIN_INSTALL_DIR)
    install(TARGETS ${name} LIBRARY DESTINATION ${TESSERA_PLUGIN_INSTALL_DIR})
  endif()
endfunction()
