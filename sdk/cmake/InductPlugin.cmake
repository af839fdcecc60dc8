# induct_add_plugin(NAME SOURCES src... [OUTPUT_DIRECTORY dir]): a plugin library for induct.
#
# Plugins are MODULE libraries built as C++17 with -fvisibility=hidden and a linker version
# script that exports only `induct_plugin_entry`; they link LibTorch and the SDK themselves
# with -z defs, so a missing symbol fails the link, not a user's run; their RUNPATH finds the
# SDK library. Works in induct's own tree and, through find_package(Induct), outside it.

function(induct_add_plugin name)
  cmake_parse_arguments(ARG "" "OUTPUT_DIRECTORY" "SOURCES" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "induct_add_plugin(${name}): no SOURCES")
  endif()
  add_library(${name} MODULE ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE Induct::sdk)
  set(version_script "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/plugin.map")
  target_link_options(${name} PRIVATE "LINKER:-z,defs" "LINKER:--version-script=${version_script}")
  set_property(TARGET ${name} APPEND PROPERTY LINK_DEPENDS "${version_script}")
  if(NOT ARG_OUTPUT_DIRECTORY)
    if(DEFINED INDUCT_PLUGIN_OUTPUT_DIR)
      set(ARG_OUTPUT_DIRECTORY "${INDUCT_PLUGIN_OUTPUT_DIR}")  # induct's own build
    else()
      set(ARG_OUTPUT_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}")
    endif()
  endif()
  if(DEFINED INDUCT_SDK_LIBRARY_DIR)
    # Out of tree: the installed SDK, wherever the plugin ends up.
    set(runpath "${INDUCT_SDK_LIBRARY_DIR}")
  else()
    # In tree: the plugin folder is <prefix>/lib/induct/plugins, the SDK is in <prefix>/lib.
    set(runpath "$ORIGIN/../..")
  endif()
  set_target_properties(${name} PROPERTIES
    PREFIX "lib"
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    CXX_STANDARD 17
    CXX_STANDARD_REQUIRED ON
    LIBRARY_OUTPUT_DIRECTORY "${ARG_OUTPUT_DIRECTORY}"
    BUILD_RPATH "${runpath}"
    INSTALL_RPATH "${runpath}")
  target_compile_options(${name} PRIVATE -Wall -Wextra -Wno-unused-parameter)
  if(INDUCT_WARNINGS_AS_ERRORS)  # induct's own build, in CI
    target_compile_options(${name} PRIVATE -Werror)
  endif()
endfunction()
