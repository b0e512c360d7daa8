/* libocispec internal helpers over yajl's tree API. */
#pragma once
