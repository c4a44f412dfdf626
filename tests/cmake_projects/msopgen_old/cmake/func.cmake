# Stand-in for the template's cmake/func.cmake: opbuild() runs at configure time over the host
# sources, as CANN's does; here it only generates the kernel-side TilingData structs from every
# op_host/*_tiling.h (what the replay and kernel builds read), with the line-by-line parser.
function(opbuild)
  cmake_parse_arguments(OPBUILD "" "OUT_DIR" "OPS_SRC" ${ARGN})
  file(GLOB headers ${CMAKE_SOURCE_DIR}/op_host/*_tiling.h)
  foreach(header IN LISTS headers)
    execute_process(COMMAND ${ASCEND_PYTHON_EXECUTABLE}
                            ${CMAKE_SOURCE_DIR}/cmake/util/tiling_data_def_build.py
                            ${header} ${OPBUILD_OUT_DIR}
                    RESULT_VARIABLE rc ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "opbuild: ${err}")
    endif()
  endforeach()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${headers})
endfunction()
