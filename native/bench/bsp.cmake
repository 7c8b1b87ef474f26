# cs_bsp: link a real CBLAS for the DGEMM workload (included by native/CMakeLists.txt
# inside its loop; the target is cs_bsp).
#
# Preferred: commscope passes the scipy-openblas32 wheel's location at configure time
#   -DCOMMSCOPE_BLAS_INCLUDE_DIR=<scipy_openblas32.get_include_dir()>
#   -DCOMMSCOPE_BLAS_LIB_DIR=<scipy_openblas32.get_lib_dir()>
#   -DCOMMSCOPE_BLAS_LIBRARY=<scipy_openblas32.get_library()>   (scipy_openblas)
#   -DCOMMSCOPE_BLAS_PREFIX=scipy_                               (symbol prefix)
# Otherwise the wheel is looked up through COMMSCOPE_PYTHON, the checkout's .venv or
# python3 on PATH; failing that, a system CBLAS (find_package(BLAS) + cblas.h).  With
# no CBLAS at all cs_bsp still builds and refuses --workload dgemm with a clear message.

if(NOT COMMSCOPE_BLAS_INCLUDE_DIR OR NOT COMMSCOPE_BLAS_LIB_DIR)
  set(_cs_pythons ${COMMSCOPE_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/../.venv/bin/python)
  find_program(_cs_python3 python3)
  if(_cs_python3)
    list(APPEND _cs_pythons ${_cs_python3})
  endif()
  foreach(_py ${_cs_pythons})
    if(EXISTS ${_py} AND NOT COMMSCOPE_BLAS_LIB_DIR)
      execute_process(
        COMMAND ${_py} -c "import scipy_openblas32 as o; print(o.get_include_dir()); print(o.get_lib_dir()); print(o.get_library())"
        OUTPUT_VARIABLE _cs_out RESULT_VARIABLE _cs_rc ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
      if(_cs_rc EQUAL 0)
        string(REPLACE "\n" ";" _cs_out "${_cs_out}")
        list(GET _cs_out 0 COMMSCOPE_BLAS_INCLUDE_DIR)
        list(GET _cs_out 1 COMMSCOPE_BLAS_LIB_DIR)
        list(GET _cs_out 2 COMMSCOPE_BLAS_LIBRARY)
        set(COMMSCOPE_BLAS_PREFIX scipy_)
      endif()
    endif()
  endforeach()
endif()

set(_cs_blas_lib "")
if(COMMSCOPE_BLAS_INCLUDE_DIR AND COMMSCOPE_BLAS_LIB_DIR)
  if(NOT COMMSCOPE_BLAS_LIBRARY)
    set(COMMSCOPE_BLAS_LIBRARY scipy_openblas)
  endif()
  find_library(CS_BSP_BLAS_LIB NAMES ${COMMSCOPE_BLAS_LIBRARY}
               PATHS ${COMMSCOPE_BLAS_LIB_DIR} NO_DEFAULT_PATH)
  if(CS_BSP_BLAS_LIB)
    set(_cs_blas_lib ${CS_BSP_BLAS_LIB})
    target_include_directories(cs_bsp PRIVATE ${COMMSCOPE_BLAS_INCLUDE_DIR})
  endif()
else()
  find_package(BLAS QUIET)
  find_path(CS_BSP_CBLAS_INCLUDE cblas.h)
  if(BLAS_FOUND AND CS_BSP_CBLAS_INCLUDE)
    set(_cs_blas_lib ${BLAS_LIBRARIES})
    target_include_directories(cs_bsp PRIVATE ${CS_BSP_CBLAS_INCLUDE})
  endif()
endif()

if(_cs_blas_lib)
  target_link_libraries(cs_bsp PRIVATE ${_cs_blas_lib})
  # CS_BLAS_PREFIX may be empty (a plain cblas_dgemm)
  target_compile_definitions(cs_bsp PRIVATE CS_HAVE_BLAS=1 "CS_BLAS_PREFIX=${COMMSCOPE_BLAS_PREFIX}")
  if(_cs_blas_lib MATCHES "openblas")
    target_compile_definitions(cs_bsp PRIVATE CS_BLAS_OPENBLAS=1)
  endif()
  message(STATUS "cs_bsp: DGEMM through ${_cs_blas_lib}")
else()
  message(STATUS "cs_bsp: no CBLAS found; --workload dgemm disabled")
endif()
