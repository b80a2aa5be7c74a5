// A PyTorch checkpoint (torch.save's zip with a pickled state dict): the zip directory, the pickle machine and
// every tensor's storage, view and bytes.
#include "error.h"
#include "fuzz_input.h"
#include "io/torch_checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const auto checkpoint = speculum::TorchCheckpoint::open(speculum::fuzz::write_input(data, size, "model.pt"));
    for (const speculum::CheckpointTensor& tensor : checkpoint.tensors())
      if (checkpoint.read(tensor).size() != tensor.nbytes()) __builtin_trap();
  } catch (const speculum::Error&) {
  }
  return 0;
}
