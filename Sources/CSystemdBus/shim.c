// Nothing to compile: CSystemdBus is sd-bus's header and library (a C target needs a source).
#include "CSystemdBus.h"
