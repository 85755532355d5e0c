# Included from the top-level CMakeLists.txt (CUDA must be enabled at the top directory scope):
# enables CUDA and sets TRAINSIM_HAVE_CUDA when a toolkit with cuBLASLt and NCCL is found.
# Nothing else in the project needs CUDA.
set(TRAINSIM_HAVE_CUDA OFF)
option(TRAINSIM_CUDA "Build the CUDA kernels and trainsim-validate when a toolkit is found" ON)
if(TRAINSIM_CUDA)
  # nvcc is often not on PATH; the machines this project targets have it here.
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc CACHE FILEPATH "CUDA compiler")
  endif()
  include(CheckLanguage)
  check_language(CUDA)
endif()
if(TRAINSIM_CUDA AND CMAKE_CUDA_COMPILER)
  # A100 (sm_80) and H100/H200 (sm_90) only: each extra architecture is another full device
  # compilation, and CI builds this on 2 cores.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 80 90)
  endif()
  enable_language(CUDA)
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  find_package(CUDAToolkit REQUIRED)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
  if(NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    set(TRAINSIM_HAVE_CUDA ON)
    message(STATUS "trainsim: CUDA ${CUDAToolkit_VERSION} (${CMAKE_CUDA_COMPILER}), architectures "
                   "${CMAKE_CUDA_ARCHITECTURES}, NCCL ${NCCL_LIBRARY}: building trainsim-validate")
  else()
    message(STATUS "trainsim: CUDA found but not NCCL; the CUDA kernels and trainsim-validate are skipped")
  endif()
else()
  message(STATUS "trainsim: no CUDA toolkit; the CUDA kernels and trainsim-validate are skipped")
endif()
