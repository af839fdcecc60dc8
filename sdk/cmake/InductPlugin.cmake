# induct_add_plugin(NAME SOURCES src...): a plugin library for induct.
#
# Plugins are MODULE libraries built with -fvisibility=hidden and a linker version script
# that exports only `induct_plugin_entry`; they link torch and the SDK themselves with
# -z defs, so a missing symbol fails the link, not a user's run (BUILD-NOTES.md).

function(induct_add_plugin name)
  cmake_parse_arguments(ARG "" "OUTPUT_DIRECTORY" "SOURCES" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "induct_add_plugin(${name}): no SOURCES")
  endif()
  add_library(${name} MODULE ${ARG_SOURCES})
  if(TARGET Induct::sdk)
    target_link_libraries(${name} PRIVATE Induct::sdk)
  else()
    target_link_libraries(${name} PRIVATE induct_sdk)
  endif()
  set(version_script "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/plugin.map")
  target_link_options(${name} PRIVATE "LINKER:-z,defs" "LINKER:--version-script=${version_script}")
  set_property(TARGET ${name} APPEND PROPERTY LINK_DEPENDS "${version_script}")
  if(NOT ARG_OUTPUT_DIRECTORY)
    if(DEFINED INDUCT_PLUGIN_OUTPUT_DIR)
      set(ARG_OUTPUT_DIRECTORY "${INDUCT_PLUGIN_OUTPUT_DIR}")
    else()
      set(ARG_OUTPUT_DIRECTORY "${CMAKE_CURRENT_BINARY_DIR}")
    endif()
  endif()
  set_target_properties(${name} PROPERTIES
    PREFIX "lib"
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    CXX_STANDARD 17
    CXX_STANDARD_REQUIRED ON
    LIBRARY_OUTPUT_DIRECTORY "${ARG_OUTPUT_DIRECTORY}"
    # The plugin folder is <prefix>/lib/induct/plugins; the SDK is in <prefix>/lib.
    BUILD_RPATH "$ORIGIN/../.."
    INSTALL_RPATH "$ORIGIN/../..")
  target_compile_options(${name} PRIVATE -Wall -Wextra -Wno-unused-parameter)
endfunction()
