#include <string>

#include "cuda_check.hpp"
#include "gemm_cublaslt.hpp"

namespace trainsim::kernels {

namespace {

constexpr std::size_t kWorkspaceBytes = 32u << 20;

void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw CudaError(std::string(what) + " failed: cuBLAS status " +
                    std::to_string(static_cast<int>(s)));
}

cudaDataType_t data_type(GemmPrecision p) {
  switch (p) {
    case GemmPrecision::bf16:
      return CUDA_R_16BF;
    case GemmPrecision::fp16:
      return CUDA_R_16F;
    case GemmPrecision::tf32:
    case GemmPrecision::fp32:
      return CUDA_R_32F;
  }
  return CUDA_R_32F;
}

cublasComputeType_t compute_type(GemmPrecision p) {
  return p == GemmPrecision::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
}

cublasLtMatrixLayout_t layout(cudaDataType_t type, long rows, long cols, long ld, long batch,
                              long long stride) {
  cublasLtMatrixLayout_t l{};
  check(cublasLtMatrixLayoutCreate(&l, type, static_cast<std::uint64_t>(rows),
                                   static_cast<std::uint64_t>(cols), ld),
        "cublasLtMatrixLayoutCreate");
  if (batch > 1) {
    const int count = static_cast<int>(batch);
    const std::int64_t offset = stride;
    check(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                           sizeof count),
          "CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT");
    check(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &offset,
                                           sizeof offset),
          "CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET");
  }
  return l;
}

}  // namespace

const char* precision_name(GemmPrecision p) {
  switch (p) {
    case GemmPrecision::bf16:
      return "bf16";
    case GemmPrecision::fp16:
      return "fp16";
    case GemmPrecision::tf32:
      return "tf32";
    case GemmPrecision::fp32:
      return "fp32";
  }
  return "?";
}

ElementType gemm_storage(GemmPrecision p) {
  switch (p) {
    case GemmPrecision::bf16:
      return ElementType::bf16;
    case GemmPrecision::fp16:
      return ElementType::fp16;
    default:
      return ElementType::fp32;
  }
}

GemmProblem packed(GemmProblem p) {
  if (p.lda == 0) p.lda = p.trans_a ? p.k : p.m;
  if (p.ldb == 0) p.ldb = p.trans_b ? p.n : p.k;
  if (p.ldc == 0) p.ldc = p.m;
  if (p.stride_a == 0) p.stride_a = static_cast<long long>(p.m) * p.k;
  if (p.stride_b == 0) p.stride_b = static_cast<long long>(p.k) * p.n;
  if (p.stride_c == 0) p.stride_c = static_cast<long long>(p.m) * p.n;
  return p;
}

std::size_t a_elements(const GemmProblem& p) {
  const GemmProblem q = packed(p);
  const long cols = q.trans_a ? q.m : q.k;
  return static_cast<std::size_t>((q.batch - 1) * q.stride_a +
                                  static_cast<long long>(q.lda) * cols);
}
std::size_t b_elements(const GemmProblem& p) {
  const GemmProblem q = packed(p);
  const long cols = q.trans_b ? q.k : q.n;
  return static_cast<std::size_t>((q.batch - 1) * q.stride_b +
                                  static_cast<long long>(q.ldb) * cols);
}
std::size_t c_elements(const GemmProblem& p) {
  const GemmProblem q = packed(p);
  return static_cast<std::size_t>((q.batch - 1) * q.stride_c + static_cast<long long>(q.ldc) * q.n);
}

CublasLt::CublasLt() { check(cublasLtCreate(&handle_), "cublasLtCreate"); }
CublasLt::~CublasLt() { cublasLtDestroy(handle_); }

struct GemmPlan::Descriptors {
  cublasLtMatmulDesc_t op{};
  cublasLtMatrixLayout_t a{}, b{}, c{};
  cublasLtMatmulAlgo_t algo{};
  ~Descriptors() {
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

GemmPlan::GemmPlan(const CublasLt& lt, const GemmProblem& problem, GemmPrecision precision)
    : handle_(lt.get()),
      problem_(packed(problem)),
      precision_(precision),
      d_(std::make_unique<Descriptors>()),
      workspace_(kWorkspaceBytes) {
  const GemmProblem& p = problem_;
  const cudaDataType_t type = data_type(precision);
  check(cublasLtMatmulDescCreate(&d_->op, compute_type(precision), CUDA_R_32F),
        "cublasLtMatmulDescCreate");
  const cublasOperation_t ta = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t tb = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  check(cublasLtMatmulDescSetAttribute(d_->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta),
        "TRANSA");
  check(cublasLtMatmulDescSetAttribute(d_->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb),
        "TRANSB");
  d_->a = layout(type, p.trans_a ? p.k : p.m, p.trans_a ? p.m : p.k, p.lda, p.batch, p.stride_a);
  d_->b = layout(type, p.trans_b ? p.n : p.k, p.trans_b ? p.k : p.n, p.ldb, p.batch, p.stride_b);
  d_->c = layout(type, p.m, p.n, p.ldc, p.batch, p.stride_c);

  cublasLtMatmulPreference_t pref{};
  check(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  const std::uint64_t ws = kWorkspaceBytes;
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                       sizeof ws);
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(handle_, d_->op, d_->a, d_->b, d_->c,
                                                          d_->c, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (s != CUBLAS_STATUS_SUCCESS || found == 0)
    throw CudaError("cuBLASLt has no algorithm for a " + std::string(precision_name(precision)) +
                    " GEMM " + std::to_string(p.m) + "x" + std::to_string(p.n) + "x" +
                    std::to_string(p.k) + " batch " + std::to_string(p.batch));
  d_->algo = result.algo;
}

GemmPlan::~GemmPlan() = default;

void GemmPlan::run(const void* a, const void* b, void* c, cudaStream_t stream) const {
  check(cublasLtMatmul(handle_, d_->op, &problem_.alpha, a, d_->a, b, d_->b, &problem_.beta, c,
                       d_->c, c, d_->c, &d_->algo, workspace_.get(), workspace_.bytes(), stream),
        "cublasLtMatmul");
}

long cublaslt_version() { return static_cast<long>(cublasLtGetVersion()); }

}  // namespace trainsim::kernels
