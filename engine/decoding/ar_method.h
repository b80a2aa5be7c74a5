// `ar`: plain raster-order autoregressive decoding, one token per target forward. The baseline every
// speed-up is measured against, and the reference distribution every lossless method must reproduce.
#pragma once

#include "decoding/method.h"

namespace speculum {

MethodInfo ar_method_info();

class ArMethod final : public Method {
 public:
  void run(DecodeSession& session) override;
};

}  // namespace speculum
