/* STUB */
#include "oci-config.h"
#include "oci-state.h"
