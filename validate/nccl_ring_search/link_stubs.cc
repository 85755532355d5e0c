// The symbols NCCL's graph code links against but the search never calls from a topology file
// (CUDA, NVML, the transports): each aborts if it ever is.
#include "core.h"
#include "nvmlwrap.h"
#include "transport.h"
#include "coll_net.h"
#include <cstdlib>
#define DIE { abort(); }
extern "C" {
cudaError_t cudaDeviceGetAttribute(int*, cudaDeviceAttr, int) DIE
cudaError_t cudaDeviceGetByPCIBusId(int*, const char*) DIE
cudaError_t cudaDeviceGetPCIBusId(char*, int, int) DIE
cudaError_t cudaGetDevice(int*) DIE
cudaError_t cudaGetDeviceProperties(cudaDeviceProp*, int) DIE
const char* cudaGetErrorString(cudaError_t) { return "stub"; }
}
ncclResult_t initChannel(ncclComm*, int) DIE
ncclNet_t* ncclNet = NULL;
ncclCollNet_t* ncclCollNet = NULL;
struct ncclTransport ncclTransports[NTRANSPORTS] = {};
ncclResult_t wrapNvmlDeviceGetCudaComputeCapability(nvmlDevice_t, int*, int*) DIE
ncclResult_t wrapNvmlDeviceGetHandleByPciBusId(const char*, nvmlDevice_t*) DIE
ncclResult_t wrapNvmlDeviceGetIndex(nvmlDevice_t, unsigned*) DIE
ncclResult_t wrapNvmlDeviceGetNvLinkCapability(nvmlDevice_t, unsigned, nvmlNvLinkCapability_t, unsigned*) DIE
ncclResult_t wrapNvmlDeviceGetNvLinkRemotePciInfo(nvmlDevice_t, unsigned, nvmlPciInfo_t*) DIE
ncclResult_t wrapNvmlDeviceGetNvLinkState(nvmlDevice_t, unsigned, nvmlEnableState_t*) DIE
ncclResult_t wrapNvmlInit() DIE
ncclResult_t wrapNvmlSymbols() DIE
