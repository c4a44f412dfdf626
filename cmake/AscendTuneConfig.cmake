# AscendTune: emit an operator's AscendC tiling headers from ascend-tune results files inside
# a CMake build (docs/build.md). Installed with the Python package; `ascend-tune cmake-dir`
# prints this folder, for CMAKE_PREFIX_PATH (find_package(AscendTune CONFIG)) or include().
#
#   ascend_tune_tiling(OP <OpType> RESULTS <results.json>... OUT <operator project folder>
#                      [SPEC <spec.yaml>] [STYLE macro|struct] [OP_HOST] [SOC <soc>...]
#                      [BUILD_TIME])
#
# Default: `ascend-tune emit` runs now, at configure time, and the results (and SPEC) files are
# added to CMAKE_CONFIGURE_DEPENDS, so an edit re-runs the configure. msOpGen's opbuild reads
# op_host/ at configure time, so its headers must exist before: call this at the top of
# op_host/CMakeLists.txt. BUILD_TIME: the headers are written by a build step instead
# (add_custom_command), before anything that depends on the target ascend_tune_<OpType>.
# Either way emit rewrites only the files whose content changed: a re-run that changes
# nothing rebuilds nothing. Sets <OpType>_TILING_FILES (the emitted files) in the caller's
# scope and defines the target ascend_tune_<OpType> (add_dependencies on it in both modes).
#
# The tool: ASCEND_TUNE_EXECUTABLE (cache or environment variable) if set; else
# `<python> -m ascend_tune` with the project's Python (Python3_EXECUTABLE, then
# ASCEND_PYTHON_EXECUTABLE as msOpGen's presets set it, then find_package(Python3), which
# prefers an active virtual environment) when it can import ascend_tune; else `ascend-tune`
# on PATH.

if(CMAKE_VERSION VERSION_LESS 3.19)
  message(FATAL_ERROR "AscendTune needs CMake 3.19 or later (this is ${CMAKE_VERSION})")
endif()
include_guard(GLOBAL)

set(AscendTune_CMAKE_DIR "${CMAKE_CURRENT_LIST_DIR}")
# The package's __init__.py (its version): a configure dependency, so an upgrade of ascend-tune
# re-runs the configure and re-emits (rewriting only what the new version writes differently).
foreach(_ascend_tune_init "${CMAKE_CURRENT_LIST_DIR}/../../__init__.py"
                          "${CMAKE_CURRENT_LIST_DIR}/../ascend_tune/__init__.py")
  if(NOT DEFINED AscendTune_PACKAGE_INIT AND EXISTS "${_ascend_tune_init}")
    get_filename_component(AscendTune_PACKAGE_INIT "${_ascend_tune_init}" ABSOLUTE)
  endif()
endforeach()
unset(_ascend_tune_init)
if(NOT AscendTune_VERSION AND DEFINED AscendTune_PACKAGE_INIT)  # include() rather than find_package
  file(STRINGS "${AscendTune_PACKAGE_INIT}" _ascend_tune_line REGEX "^__version__ *= *")
  string(REGEX REPLACE "^__version__ *= *[\"']([^\"']*)[\"'].*" "\\1" AscendTune_VERSION
         "${_ascend_tune_line}")
  unset(_ascend_tune_line)
endif()
set(ASCEND_TUNE_EXECUTABLE "$ENV{ASCEND_TUNE_EXECUTABLE}" CACHE FILEPATH
    "ascend-tune program (empty: python -m ascend_tune with the project's Python)")

# The command that runs ascend-tune, as a list, into <out>; resolved once per setting and
# cached (a probe starts Python).
function(_ascend_tune_command out)
  set(key "${ASCEND_TUNE_EXECUTABLE}|${Python3_EXECUTABLE}|${ASCEND_PYTHON_EXECUTABLE}|$ENV{VIRTUAL_ENV}|$ENV{PATH}")
  if(DEFINED _ASCEND_TUNE_COMMAND AND _ASCEND_TUNE_COMMAND_KEY STREQUAL key)
    set(${out} "${_ASCEND_TUNE_COMMAND}" PARENT_SCOPE)
    return()
  endif()
  set(cmd "")
  set(tried "")
  if(NOT ASCEND_TUNE_EXECUTABLE STREQUAL "")
    execute_process(COMMAND "${ASCEND_TUNE_EXECUTABLE}" --version
                    RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "AscendTune: ASCEND_TUNE_EXECUTABLE=${ASCEND_TUNE_EXECUTABLE} does "
                          "not run (`${ASCEND_TUNE_EXECUTABLE} --version`: ${rc})")
    endif()
    set(cmd "${ASCEND_TUNE_EXECUTABLE}")
  else()
    set(pythons "")
    foreach(var Python3_EXECUTABLE ASCEND_PYTHON_EXECUTABLE)
      if(NOT "${${var}}" STREQUAL "")
        list(APPEND pythons "${${var}}")
      endif()
    endforeach()
    if(NOT pythons)
      find_package(Python3 COMPONENTS Interpreter QUIET)
      if(Python3_Interpreter_FOUND)
        list(APPEND pythons "${Python3_EXECUTABLE}")
      endif()
    endif()
    foreach(py IN LISTS pythons)
      execute_process(COMMAND "${py}" -c "import ascend_tune"
                      RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
      if(rc EQUAL 0)
        set(cmd "${py};-m;ascend_tune")
        break()
      endif()
      string(APPEND tried "${py} cannot import ascend_tune; ")
    endforeach()
    if(NOT cmd)
      find_program(_ASCEND_TUNE_PROGRAM ascend-tune)
      if(_ASCEND_TUNE_PROGRAM)
        set(cmd "${_ASCEND_TUNE_PROGRAM}")
      else()
        unset(_ASCEND_TUNE_PROGRAM CACHE)
        message(FATAL_ERROR " AscendTune: cannot find ascend-tune (${tried}no ascend-tune on "
                            "PATH): pip install ascend-tune into the project's Python, or set "
                            "ASCEND_TUNE_EXECUTABLE")
      endif()
    endif()
  endif()
  set(_ASCEND_TUNE_COMMAND "${cmd}" CACHE INTERNAL "ascend-tune command line")
  set(_ASCEND_TUNE_COMMAND_KEY "${key}" CACHE INTERNAL "what _ASCEND_TUNE_COMMAND was found for")
  set(${out} "${cmd}" PARENT_SCOPE)
endfunction()

# The message of a failed run of the tool: its own (the last line it wrote to stderr,
# "error: ..."), not a listing of the command. A leading space keeps CMake from re-wrapping it:
# the line appears whole, as the tool wrote it.
function(_ascend_tune_failure out op rc stderr)
  string(STRIP "${stderr}" stderr)
  string(REGEX REPLACE ".*\n" "" last "${stderr}")
  if(last STREQUAL "")
    set(last "ascend-tune exited with ${rc}")
  endif()
  set(${out} " ascend_tune_tiling(OP ${op}): ${last}" PARENT_SCOPE)
endfunction()

function(ascend_tune_tiling)
  cmake_parse_arguments(PARSE_ARGV 0 _at "OP_HOST;BUILD_TIME" "OP;OUT;SPEC;STYLE" "RESULTS;SOC")
  if(_at_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "ascend_tune_tiling: unknown argument(s) ${_at_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT _at_OP MATCHES "^[A-Za-z][A-Za-z0-9_]*$")
    message(FATAL_ERROR "ascend_tune_tiling: OP must name the operator type (e.g. AddCustom), "
                        "got '${_at_OP}'")
  endif()
  set(op "${_at_OP}")
  if(NOT _at_RESULTS)
    message(FATAL_ERROR "ascend_tune_tiling(OP ${op}): RESULTS needs a results file")
  endif()
  if(NOT _at_OUT)
    message(FATAL_ERROR "ascend_tune_tiling(OP ${op}): OUT needs the operator project folder")
  endif()
  if(NOT _at_STYLE)
    set(_at_STYLE macro)
  endif()
  if(NOT _at_STYLE MATCHES "^(macro|struct)$")
    message(FATAL_ERROR "ascend_tune_tiling(OP ${op}): STYLE is macro or struct, got "
                        "'${_at_STYLE}'")
  endif()
  set(inputs "")
  foreach(r IN LISTS _at_RESULTS)
    get_filename_component(r "${r}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND inputs "${r}")
  endforeach()
  get_filename_component(outdir "${_at_OUT}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  set(args emit ${inputs} -o "${outdir}" --style "${_at_STYLE}")
  if(_at_OP_HOST)
    list(APPEND args --op-host)
  endif()
  foreach(soc IN LISTS _at_SOC)
    list(APPEND args --soc "${soc}")
  endforeach()
  set(depends ${inputs})
  if(_at_SPEC)
    get_filename_component(spec "${_at_SPEC}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND args --spec "${spec}")
    list(APPEND depends "${spec}")
  endif()
  _ascend_tune_command(cmd)

  if(NOT _at_BUILD_TIME)
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${depends}
                 ${AscendTune_PACKAGE_INIT})
    execute_process(COMMAND ${cmd} ${args} --json RESULT_VARIABLE rc
                    OUTPUT_VARIABLE json ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
      _ascend_tune_failure(failure "${op}" "${rc}" "${err}")
      message(FATAL_ERROR "${failure}")
    endif()
    string(JSON nwritten LENGTH "${json}" written)
    if(nwritten EQUAL 0)
      message(STATUS "AscendTune: ${op}: tiling files up to date in ${outdir}")
    else()
      message(STATUS "AscendTune: ${op}: wrote ${nwritten} tiling file(s) in ${outdir}")
    endif()
    string(JSON nleft LENGTH "${json}" leftovers)
    if(nleft GREATER 0)
      math(EXPR last "${nleft} - 1")
      foreach(i RANGE ${last})
        string(JSON f GET "${json}" leftovers ${i})
        message(WARNING " AscendTune: ${op}: ${f} was generated earlier and is not written by "
                        "these options; delete it if the project no longer uses it")
      endforeach()
    endif()
    add_custom_target(ascend_tune_${op})
  else()
    # The files the build step will write, from a check that writes nothing (exit 1: stale).
    execute_process(COMMAND ${cmd} ${args} --check --json RESULT_VARIABLE rc
                    OUTPUT_VARIABLE json ERROR_VARIABLE err)
    if(NOT rc EQUAL 0 AND NOT rc EQUAL 1)
      _ascend_tune_failure(failure "${op}" "${rc}" "${err}")
      message(FATAL_ERROR "${failure}")
    endif()
    set(stamp "${CMAKE_CURRENT_BINARY_DIR}/ascend_tune_${op}.stamp")
  endif()
  string(JSON nfiles LENGTH "${json}" files)
  set(files "")
  math(EXPR last "${nfiles} - 1")
  foreach(i RANGE ${last})
    string(JSON f GET "${json}" files ${i})
    list(APPEND files "${f}")
  endforeach()
  if(_at_BUILD_TIME)
    # The stamp is the output and the headers are byproducts: ninja re-reads their times
    # after the step (restat), so an emit that rewrote nothing rebuilds nothing.
    add_custom_command(OUTPUT "${stamp}" BYPRODUCTS ${files}
                       COMMAND ${cmd} ${args} --quiet
                       COMMAND "${CMAKE_COMMAND}" -E touch "${stamp}"
                       DEPENDS ${depends}
                       COMMENT "ascend-tune: emitting the ${op} tiling files"
                       VERBATIM)
    add_custom_target(ascend_tune_${op} DEPENDS "${stamp}")
  endif()
  set(${op}_TILING_FILES "${files}" PARENT_SCOPE)
endfunction()
