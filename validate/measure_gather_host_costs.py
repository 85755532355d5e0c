# Host- and device-side cost of what DeepSpeed v0.3.13's Init._allgather_param and PyTorch's
# list-output all_gather do around the NCCL call, per rank of a group of n (no NCCL involved):
#  - a Python loop building n narrow() views of the flat buffer (partition_parameters.py),
#  - n non_blocking copy_ of S/n elements each (ProcessGroupNCCL copies its flattened output back
#    into the list), timed with the device and host-side only,
#  - one copy of S and torch.zeros(S) for comparison.
# Run on any CUDA machine with PyTorch: python3 validate/measure_gather_host_costs.py
# Output of the run behind topologies/devices/a100-80gb.json eager_view_call / eager_copy_call
# (PyTorch 2.11.0+cu130, NVIDIA H100 80GB HBM3, Intel Xeon host; "loop" is per call):
#   S=302MB n=64: loop 4.66us/rank; copies 1.017ms (15.90us each, host 619.06us); one copy 0.217ms; zeros 0.112ms
#   S=302MB n=384: loop 5.24us/rank; copies 3.957ms (10.30us each, host 13.76us); one copy 0.224ms; zeros 0.114ms
#   S=302MB n=768: loop 2.48us/rank; copies 7.826ms (10.19us each, host 11.72us); one copy 0.232ms; zeros 0.111ms
#   S=302MB n=1120: loop 4.44us/rank; copies 12.753ms (11.39us each, host 12.44us); one copy 0.225ms; zeros 0.113ms
#   S=906MB n=64: loop 4.22us/rank; copies 0.976ms (15.25us each, host 16.03us); one copy 0.634ms; zeros 0.301ms
#   S=906MB n=384: loop 4.72us/rank; copies 6.315ms (16.44us each, host 16.84us); one copy 0.624ms; zeros 0.299ms
#   S=906MB n=768: loop 5.22us/rank; copies 11.796ms (15.36us each, host 16.73us); one copy 0.620ms; zeros 0.297ms
#   S=906MB n=1120: loop 4.40us/rank; copies 12.437ms (11.10us each, host 11.44us); one copy 0.620ms; zeros 0.293ms
# (the first "host" figure includes the first call's warm-up; "copies" is the best of 5).
import time,torch
d="cuda";print(torch.__version__,torch.cuda.get_device_name())
def t(f,r=5):
 b=9
 for _ in range(r):
  torch.cuda.synchronize();a=time.perf_counter();f();torch.cuda.synchronize();b=min(b,time.perf_counter()-a)
 return b
for S in(151_000_000,453_000_000):
 fl=torch.empty(S,dtype=torch.half,device=d);o=torch.empty(S,dtype=torch.half,device=d)
 for n in(64,384,768,1120):
  p=S//n
  def L():
   q=[]
   for i in range(n):
    q.append(fl.narrow(0,p*i,p))
    if i==3:pass
   return q
  tl=t(L);P=L();O=[o.narrow(0,p*i,p) for i in range(n)]
  def C():
   for i in range(n):O[i].copy_(P[i],non_blocking=True)
  torch.cuda.synchronize();a=time.perf_counter();C();h=time.perf_counter()-a;torch.cuda.synchronize()
  tc=t(C);one=t(lambda:o.copy_(fl));tz=t(lambda:torch.zeros(S,dtype=torch.half,device=d))
  print(f"S={S*2/1e6:.0f}MB n={n}: loop {tl/n*1e6:.2f}us/rank; copies {tc*1e3:.3f}ms ({tc/n*1e6:.2f}us each, host {h/n*1e6:.2f}us); one copy {one*1e3:.3f}ms; zeros {tz*1e3:.3f}ms")
