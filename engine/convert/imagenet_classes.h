// ImageNet-1k class names, index-aligned with the class ids LlamaGen's class-conditional models use.
#pragma once

#include <string>
#include <vector>

namespace speculum {

const std::vector<std::string>& imagenet_class_names();

}  // namespace speculum
