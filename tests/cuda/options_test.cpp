// Context options of the CUDA plugin.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "options.hpp"
#include "plugin_error.hpp"

namespace {

using bonsai::cuda::parse_options;

// `options` must be refused with a message containing `message`.
void expect_refused(const char *options, const char *message) {
  try {
    parse_options(options);
    ADD_FAILURE() << options << " was accepted";
  } catch (const bonsai::cuda::PluginError &e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr(message)) << options;
  }
}

TEST(CudaOptions, DefaultsUseGraphsAndTheCache) {
  for (const char *text : {static_cast<const char *>(nullptr), "", " ; "}) {
    const auto o = parse_options(text);
    EXPECT_TRUE(o.use_graphs);
    EXPECT_TRUE(o.ptx_cache);
    EXPECT_TRUE(o.warnings.empty());
  }
}

TEST(CudaOptions, ReferenceKernelsTurnGraphsOff) {
  EXPECT_FALSE(parse_options("kernels=reference").use_graphs);
  EXPECT_TRUE(parse_options("kernels=auto").use_graphs);
  EXPECT_FALSE(parse_options("graphs=off").use_graphs);
}

TEST(CudaOptions, ReferenceKernelsTurnTheFastMatmulsOff) {
  const auto reference = parse_options("kernels=reference");
  EXPECT_FALSE(reference.tensor_cores);
  EXPECT_FALSE(reference.int8_gemv);
  const auto defaults = parse_options("");
  EXPECT_TRUE(defaults.tensor_cores);
  EXPECT_TRUE(defaults.int8_gemv);
  EXPECT_FALSE(parse_options("int8_gemv=off").int8_gemv);
  EXPECT_TRUE(parse_options("int8_gemv=off").tensor_cores);
  EXPECT_THROW(parse_options("int8_gemv=sometimes"), bonsai::cuda::PluginError);
}

TEST(CudaOptions, PrefillIsInt8UnlessF16IsAskedFor) {
  EXPECT_TRUE(parse_options(nullptr).prefill_int8);
  EXPECT_TRUE(parse_options("prefill=int8").prefill_int8);
  EXPECT_FALSE(parse_options("prefill=f16").prefill_int8);
  expect_refused("prefill=fp8", "prefill=fp8: expected int8 or f16");
}

TEST(CudaOptions, KvCacheIsF32UnlessKvF16IsAskedFor) {
  EXPECT_FALSE(parse_options(nullptr).kv_f16);
  EXPECT_FALSE(parse_options("").kv_f16);
  EXPECT_FALSE(parse_options("kv=f32").kv_f16);
  EXPECT_TRUE(parse_options("kv=f16").kv_f16);
  EXPECT_TRUE(parse_options("kernels=reference;kv=f16").kv_f16);
  expect_refused("kv=q8", "kv=q8: expected f16 or f32");
}

TEST(CudaOptions, Int8InputIsQuantizedOncePerTokenUnlessPerBlockIsAskedFor) {
  EXPECT_TRUE(parse_options(nullptr).int8_input_per_token);
  EXPECT_TRUE(parse_options("int8_input=token").int8_input_per_token);
  EXPECT_FALSE(parse_options("int8_input=block").int8_input_per_token);
  expect_refused("int8_input=row", "int8_input=row: expected token or block");
}

TEST(CudaOptions, UploadChunkIsSixteenMibUnlessGivenInKib) {
  EXPECT_EQ(parse_options(nullptr).upload_chunk_bytes, 16u << 20);
  EXPECT_EQ(parse_options("upload_chunk_kib=1").upload_chunk_bytes, 1024u);
  EXPECT_EQ(parse_options("upload_chunk_kib=1048576").upload_chunk_bytes, uint64_t{1} << 30);
  for (const char *bad :
       {"upload_chunk_kib=0", "upload_chunk_kib=1048577", "upload_chunk_kib=-4",
        "upload_chunk_kib=4k", "upload_chunk_kib=", "upload_chunk_kib=99999999999"}) {
    expect_refused(bad, "expected a whole number of KiB from 1 to 1048576");
  }
}

TEST(CudaOptions, ProgrammaticLaunchIsOffUnlessAskedFor) {
  EXPECT_FALSE(parse_options(nullptr).programmatic_launch);
  EXPECT_TRUE(parse_options(nullptr).persistent_head);
  EXPECT_FALSE(parse_options("persistent_head=off").persistent_head);
  EXPECT_TRUE(parse_options("persistent_head=on").persistent_head);
  expect_refused("persistent_head=maybe", "persistent_head=maybe: expected on or off");
  EXPECT_FALSE(parse_options(nullptr).persistent_prefetch);
  EXPECT_TRUE(parse_options("persistent_prefetch=next").persistent_prefetch);
  EXPECT_FALSE(parse_options("persistent_prefetch=off").persistent_prefetch);
  expect_refused("persistent_prefetch=on", "persistent_prefetch=on: expected off or next");
  EXPECT_TRUE(parse_options("pdl=on").programmatic_launch);
  EXPECT_FALSE(parse_options("pdl=off").programmatic_launch);
  expect_refused("pdl=sometimes", "pdl=sometimes: expected on or off");
}

TEST(CudaOptions, PtxCacheSwitch) {
  EXPECT_FALSE(parse_options("ptx_cache=off").ptx_cache);
  EXPECT_FALSE(parse_options(" ptx_cache = 0 ;kernels=auto").ptx_cache);
  EXPECT_TRUE(parse_options("ptx_cache=on").ptx_cache);
}

TEST(CudaOptions, UnknownKeysAndMalformedEntriesWarn) {
  const auto o = parse_options("colour=blue;justtext");
  ASSERT_EQ(o.warnings.size(), 2u);
  EXPECT_THAT(o.warnings[0], ::testing::HasSubstr("colour"));
  EXPECT_THAT(o.warnings[1], ::testing::HasSubstr("justtext"));
}

TEST(CudaOptions, BadValuesOfKnownKeysAreErrors) {
  EXPECT_THROW(parse_options("kernels=fastest"), bonsai::cuda::PluginError);
  EXPECT_THROW(parse_options("ptx_cache=maybe"), bonsai::cuda::PluginError);
}

} // namespace

namespace {

TEST(CudaOptions, DecodeIsAutoUnlessAskedForAndGraphUnderTheReferenceKernels) {
  using bonsai::cuda::DecodeMode;
  using bonsai::cuda::persistent_decode_wanted;
  EXPECT_EQ(parse_options(nullptr).decode, DecodeMode::automatic);
  EXPECT_EQ(parse_options("decode=auto").decode, DecodeMode::automatic);
  EXPECT_EQ(parse_options("decode=graph").decode, DecodeMode::graph);
  EXPECT_EQ(parse_options("decode=persistent").decode, DecodeMode::persistent);
  // The reference kernels are the plain path: a persistent decode before
  // them is turned off.
  EXPECT_EQ(parse_options("decode=persistent;kernels=reference").decode, DecodeMode::graph);
  expect_refused("decode=megakernel", "decode=megakernel: expected auto, persistent or graph");
  // auto builds the kernel where it was measured (Hopper) only; persistent
  // wherever asked for, graph nowhere.
  EXPECT_TRUE(persistent_decode_wanted(DecodeMode::automatic, 9));
  EXPECT_FALSE(persistent_decode_wanted(DecodeMode::automatic, 8));
  EXPECT_TRUE(persistent_decode_wanted(DecodeMode::persistent, 7));
  EXPECT_FALSE(persistent_decode_wanted(DecodeMode::graph, 9));
}

TEST(CudaOptions, PersistentDeadlineIsWholeMillisecondsUpToTenMinutes) {
  EXPECT_EQ(parse_options(nullptr).persistent_deadline_ms, 1000);
  EXPECT_EQ(parse_options("persistent_deadline_ms=1").persistent_deadline_ms, 1);
  EXPECT_EQ(parse_options("persistent_deadline_ms=600000").persistent_deadline_ms, 600000);
  for (const char *bad : {"persistent_deadline_ms=0", "persistent_deadline_ms=600001",
                          "persistent_deadline_ms=", "persistent_deadline_ms=1.5",
                          "persistent_deadline_ms=-3", "persistent_deadline_ms=99999999999"})
    expect_refused(bad, "expected a whole number of milliseconds from 1 to 600000");
}

TEST(CudaOptions, PersistentSingleFromIsAContextLengthOrByModel) {
  EXPECT_EQ(parse_options(nullptr).persistent_single_from, -1);
  EXPECT_EQ(parse_options("persistent_single_from=1").persistent_single_from, 1);
  EXPECT_EQ(parse_options("persistent_single_from=4096").persistent_single_from, 4096);
  for (const char *bad : {"persistent_single_from=0", "persistent_single_from=",
                          "persistent_single_from=-1", "persistent_single_from=1073741825"})
    expect_refused(bad, "expected a whole number of tokens of context from 1 to 1073741824");
}

TEST(CudaOptions, PersistentKeysPerRangeIsAKeyCountOrOff) {
  EXPECT_EQ(parse_options(nullptr).persistent_keys_per_range, 0);
  EXPECT_EQ(parse_options("persistent_keys_per_range=1").persistent_keys_per_range, 1);
  EXPECT_EQ(parse_options("persistent_keys_per_range=256").persistent_keys_per_range, 256);
  for (const char *bad :
       {"persistent_keys_per_range=0", "persistent_keys_per_range=", "persistent_keys_per_range=-4",
        "persistent_keys_per_range=2.5", "persistent_keys_per_range=1073741825"})
    expect_refused(bad, "expected a whole number of keys from 1 to 1073741824");
}

TEST(CudaOptions, PersistentRecordsAreReadFromSharedMemoryUnlessRegistersAreAskedFor) {
  EXPECT_FALSE(parse_options(nullptr).persistent_held_records);
  EXPECT_TRUE(parse_options("persistent_records=registers").persistent_held_records);
  EXPECT_FALSE(parse_options("persistent_records=shared").persistent_held_records);
  for (const char *bad :
       {"persistent_records=", "persistent_records=Registers", "persistent_records=local"})
    expect_refused(bad, "expected shared or registers");
}

TEST(CudaOptions, PersistentInputsAreQuantizedByTheirProducersUnlessConsumerIsAskedFor) {
  EXPECT_TRUE(parse_options(nullptr).persistent_producer_quantize);
  EXPECT_FALSE(parse_options("persistent_quantize=consumer").persistent_producer_quantize);
  EXPECT_TRUE(parse_options("persistent_quantize=producer").persistent_producer_quantize);
  expect_refused("persistent_quantize=both",
                 "persistent_quantize=both: expected consumer or producer");
}

TEST(CudaOptions, PersistentStepsOfSeveralTokensMultiplyOnTheMmaUnlessDp4aIsAskedFor) {
  EXPECT_TRUE(parse_options(nullptr).persistent_mma);
  EXPECT_FALSE(parse_options("persistent_matmul=dp4a").persistent_mma);
  EXPECT_TRUE(parse_options("persistent_matmul=mma").persistent_mma);
  expect_refused("persistent_matmul=wmma", "persistent_matmul=wmma: expected dp4a or mma");
}

TEST(CudaOptions, PersistentTraceIsOffUnlessGivenAFile) {
  EXPECT_EQ(parse_options(nullptr).persistent_trace, "");
  EXPECT_EQ(parse_options("persistent_trace=/tmp/trace.txt").persistent_trace, "/tmp/trace.txt");
  expect_refused("persistent_trace=", "persistent_trace=: expected the path of the file to write");
}

} // namespace

namespace {

TEST(CudaOptions, PrefillAttentionIsOnTensorCoresUnlessCudaCoresAreAskedFor) {
  EXPECT_TRUE(parse_options(nullptr).attention_tc);
  EXPECT_TRUE(parse_options("prefill_attention=tc").attention_tc);
  EXPECT_FALSE(parse_options("prefill_attention=cores").attention_tc);
  expect_refused("prefill_attention=flash", "prefill_attention=flash: expected tc or cores");
}

} // namespace
