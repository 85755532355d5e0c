#!/usr/bin/env python3
"""Writes the topology XML NCCL 2.8.3's ncclTopoGetSystem would build on one DGX A100 for a
communicator holding the given GPUs (v2.8.3-1 src/graph/topo.cc:517-565): the communicator's GPUs
in rank order, then every NIC in device order, each under its CPU, so the CPU (NUMA) nodes and
the NET nodes appear in that creation order, which is the order the ring search tries NICs in.

Assumptions (no DGX A100 topology dump is public here; each as `nvidia-smi topo -m` on a DGX A100
shows it): one NUMA node per PCIe switch complex (NPS4: GPUs 0-1 NUMA 3, 2-3 NUMA 1, 4-5 NUMA 7,
6-7 NUMA 5); in each complex two GPUs and two HDR HCAs, PXB apart (GPU and HCA behind different
second-level switches); the eight compute HCAs mlx5_0-3, 6-9 only (storage HCAs left out, as
NCCL_IB_HCA would); PCIe Gen4 x16 everywhere (NCCL rates it 24 GB/s), HCAs 200 Gb/s (25 GB/s).

usage: dgx_a100_topology.py 0,2,4,6 > comm.xml   (local GPU indices of the communicator)
"""
import sys

NUMA_OF_SWITCH = [3, 1, 7, 5]
GPU_BUS = ["07", "0f", "47", "4e", "87", "90", "b7", "bd"]
HCA_BUS = ["0c", "12", "4b", "54", "8d", "94", "ba", "cc"]
HCA_NAME = ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9"]


def main() -> None:
    gpus = [int(x) for x in sys.argv[1].split(",")]
    order = []  # switch complexes (CPU nodes) in the order NCCL creates them
    for i in gpus + list(range(8)):
        if i // 2 not in order:
            order.append(i // 2)
    out = ['<system version="1">']
    for sw in order:
        out.append(f'  <cpu numaid="{NUMA_OF_SWITCH[sw]}" arch="x86_64" vendor="AuthenticAMD" familyid="23" modelid="49">')
        out.append(f'    <pci busid="0000:{sw:02x}:01.0" class="0x060400" link_speed="16 GT/s" link_width="16">')
        for g in (g for g in gpus if g // 2 == sw):
            rank = gpus.index(g)
            out.append(f'      <pci busid="0000:{sw:02x}:{2 + g % 2:02x}.0" class="0x060400" link_speed="16 GT/s" link_width="16">')
            out.append(f'        <pci busid="0000:{GPU_BUS[g]}:00.0" class="0x030200" link_speed="16 GT/s" link_width="16">')
            # dev is the process's CUDA device; one per rank here (it does not enter the search).
            out.append(f'          <gpu dev="{rank}" sm="80" rank="{rank}" gdr="1">')
            for s in range(6):  # 12 NVLink3 links, two to each of the 6 NVSwitches
                out.append(f'            <nvlink target="0000:c{s}:00.0" count="2" tclass="0x068000"/>')
            out.append("          </gpu>\n        </pci>\n      </pci>")
        for n in (n for n in range(8) if n // 2 == sw):
            out.append(f'      <pci busid="0000:{sw:02x}:{4 + n % 2:02x}.0" class="0x060400" link_speed="16 GT/s" link_width="16">')
            out.append(f'        <pci busid="0000:{HCA_BUS[n]}:00.0" class="0x020700" link_speed="16 GT/s" link_width="16">')
            out.append(f'          <nic><net name="{HCA_NAME[n]}" dev="{n}" speed="200000" port="1" guid="0x{0x1000 + n:x}" maxconn="131072" gdr="1"/></nic>')
            out.append("        </pci>\n      </pci>")
        out.append("    </pci>\n  </cpu>")
    out.append("</system>")
    print("\n".join(out))


if __name__ == "__main__":
    main()
