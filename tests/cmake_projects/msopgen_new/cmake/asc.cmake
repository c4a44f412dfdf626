# Stand-in for the 9.x template's find_package(ASC) and npu_op_* functions: the tiling library
# and the kernels compiled with g++ against the stand-in CANN headers.
if(NOT ASCEND_CANN_PACKAGE_PATH)
  set(ASCEND_CANN_PACKAGE_PATH "$ENV{ASCEND_CANN_PACKAGE_PATH}")
endif()
include_directories(${ASCEND_CANN_PACKAGE_PATH}/include)
function(npu_op_library name kind)
  add_library(${name} SHARED ${ARGN})
  target_compile_definitions(${name} PRIVATE OP_TILING_LIB)
endfunction()
function(npu_op_kernel_library name)
  add_library(${name} OBJECT ${ARGN})
endfunction()
