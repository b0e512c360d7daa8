/* criu's pagemap image (pagemap-*.img), which tern-migrate reads to count
 * the pages a post-copy migration leaves for the page server: a protobuf
 * stream parsed by tern's own small reader. */
#include "migrate.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t pages;

	tern_mig_pagemap_lazy_parse(data, size, &pages);
	return 0;
}
