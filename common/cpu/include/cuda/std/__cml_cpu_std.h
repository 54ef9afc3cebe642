/* <cuda/std/...> on the CPU path: libcu++'s cuda::std is the host C++
 * standard library here (the CPU path compiles C++17, nvcc's default), so
 * each <cuda/std/NAME> includes <NAME> and cuda::std names ::std. The
 * toolkit's own cuda/std headers need nvcc and must not be reached: this
 * directory comes first on the include path. */
#ifndef CML_CPU_CUDA_STD_H
#define CML_CPU_CUDA_STD_H
#ifndef __cplusplus
#error "<cuda/std/...> headers are C++: include them from a .cu file"
#endif
namespace cuda {
namespace std = ::std;
}
#endif
