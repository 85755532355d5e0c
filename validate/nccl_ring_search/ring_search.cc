#include "core.h"
#include "graph.h"
#include "topo.h"
#include "xml.h"
// Runs NCCL's own ring search (src/graph/search.cc ncclTopoCompute, as init.cc sets the ring
// graph up: crossNic from NCCL_CROSS_NIC's default 2, up to MAXCHANNELS/2 channels) on one node's
// topology XML whose GPUs with a rank attribute are the communicator's, and prints the channels:
// which NIC each starts and ends at and the GPU order. Nothing here comes from NCCL but the calls.
int main(int argc, char** argv) {
  if (argc != 2) { fprintf(stderr, "usage: ring_search TOPOLOGY.xml\n"); return 2; }
  struct ncclXml* xml; NCCLCHECK(ncclCalloc(&xml, 1));
  NCCLCHECK(ncclTopoGetXmlFromFile(argv[1], xml));
  struct ncclTopoSystem* system;
  NCCLCHECK(ncclTopoGetSystemFromXml(xml, &system));
  NCCLCHECK(ncclTopoComputePaths(system, NULL));
  NCCLCHECK(ncclTopoSearchInit(system));
  printf("maxWidth %g totalWidth %g NETs:", system->maxWidth, system->totalWidth);
  for (int n=0;n<system->nodes[NET].count;n++) printf(" %ld", (long)system->nodes[NET].nodes[n].id);
  printf("\n");
  for (int g=0; g<system->nodes[GPU].count; g++) {
    printf("GPU rank %d:", system->nodes[GPU].nodes[g].gpu.rank);
    for (int n=0;n<system->nodes[NET].count;n++) printf(" net%ld %s/%g", (long)system->nodes[NET].nodes[n].id, topoPathTypeStr[system->nodes[GPU].nodes[g].paths[NET][n].type], system->nodes[GPU].nodes[g].paths[NET][n].width);
    printf("\n");
  }
  struct ncclTopoGraph ring; memset(&ring, 0, sizeof(ring));
  ring.id = 0; ring.pattern = NCCL_TOPO_PATTERN_RING; ring.crossNic = 2; ring.collNet = 0;
  ring.minChannels = 1; ring.maxChannels = MAXCHANNELS/2;
  NCCLCHECK(ncclTopoCompute(system, &ring));
  int ngpus = system->nodes[GPU].count;
  printf("ring: nChannels %d speedIntra %g speedInter %g typeIntra %s typeInter %s crossNic %d sameChannels %d\n", ring.nChannels, ring.speedIntra, ring.speedInter, topoPathTypeStr[ring.typeIntra], topoPathTypeStr[ring.typeInter], ring.crossNic, ring.sameChannels);
  for (int c=0;c<ring.nChannels;c++) {
    printf(" %2d: NET %d ->", c, ring.inter[2*c]);
    for (int i=0;i<ngpus;i++) printf(" r%d", ring.intra[ngpus*c+i]);
    printf(" -> NET %d\n", ring.inter[2*c+1]);
  }
  return 0;
}
