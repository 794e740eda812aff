//! The GPU suite, by topic. Without a CUDA device every test reports "ignored" (with the
//! reason) instead of passing; on a GPU machine they run (scripts/gpu-tests-parallel.sh
//! runs each in a process of its own).

#[path = "../common/mod.rs"]
mod common;
mod support;

mod applications;
mod backward_segmented;
mod bad_input;
mod carries;
mod determinism;
mod distributed;
mod kernels;
mod operator_space;
mod operators;
mod scans;
mod select;
mod sort;
mod strided;

use common::harness::{self, tests};

fn main() {
    harness::run(
        tests![
            applications::calls_leave_the_current_context_unchanged,
            applications::stress_threads_and_streams,
            applications::graph_capture_and_replay,
            applications::caller_workspace_back_to_back,
            applications::graph_replay_of_backward_segmented_scans,
            backward_segmented::randomized_backward_segmented_and_deterministic,
            backward_segmented::large_backward_and_segmented,
            bad_input::bad_input_is_rejected_without_writing_and_context_stays_usable,
            bad_input::bad_segment_input_is_rejected_without_writing,
            carries::carries_at_every_tile_boundary,
            carries::carries_sanitizer_subset,
            carries::chained_carries_in_a_graph,
            carries::segment_carries_at_every_tile_boundary,
            carries::segment_carries_sanitizer_subset,
            carries::out_of_core_scans_of_host_arrays,
            carries::out_of_core_scans_with_a_device_side,
            determinism::matrix_scan_is_run_to_run_deterministic,
            distributed::scans_across_every_gpu,
            distributed::rank_form_from_a_thread_per_rank,
            distributed::single_process_form_with_a_user_operator,
            distributed::bad_parts_are_refused_before_any_collective,
            determinism::deterministic_float_scans_are_bitwise_reproducible,
            determinism::deterministic_scans_are_alignment_independent,
            determinism::deterministic_strided_scans_are_bitwise_reproducible,
            kernels::bulk_copy_single_pass_at_every_size,
            kernels::one_wave_single_pass_at_every_size,
            kernels::cluster_kernel_at_every_cluster_size,
            kernels::tag_wraparound_clears_stale_slots,
            kernels::sanitizer_subset,
            operator_space::operator_space_states_of_4_to_16_bytes,
            operator_space::operator_space_states_of_20_to_32_bytes,
            operator_space::operator_space_states_of_36_to_48_bytes,
            operator_space::operator_space_states_of_52_to_64_bytes,
            operators::recipes_match_sequential_loops,
            operators::examples_match_sequential_loops,
            operators::wide_non_commutative_states_every_algorithm,
            operators::user_u32_sum_equals_the_built_in_sum,
            operators::narrow_states_of_wide_arrays,
            operators::bad_operators_get_a_status_and_the_compiler_log,
            operators::operators_of_one_name_keep_their_own_kernels,
            scans::randomized_every_pair_operator_mode_and_algorithm,
            scans::random_sizes_misaligned_and_in_place,
            scans::large_inputs_up_to_2_pow_28,
            scans::more_than_2_pow_32_elements,
            scans::zero_length_is_a_no_op,
            scans::seed_examples_on_the_gpu,
            scans::wide_accumulators_every_algorithm_and_tile_boundary,
            scans::small_integers_every_algorithm_and_tile_boundary,
            scans::half_types_every_algorithm_and_tile_boundary,
            scans::array_views_rows_and_foreign_memory,
            select::selections_at_every_tile_boundary,
            select::select_more_than_2_pow_32_elements,
            select::select_sanitizer_subset,
            select::select_in_graphs_and_threads,
            select::select_counts_into_page_locked_host_memory,
            sort::sorts_at_every_tile_boundary,
            sort::argsorts_past_one_portion,
            sort::sort_more_than_2_pow_32_keys,
            sort::sort_sanitizer_subset,
            sort::sort_in_graphs_and_threads,
            strided::strided_layouts_at_tile_boundaries,
            strided::narrow_columns_at_tile_boundaries,
            strided::large_strided_scans,
            strided::strided_sanitizer_subset,
            strided::user_operators_along_an_axis,
            strided::summed_area_tables_on_the_gpu,
            strided::large_summed_area_tables,
        ],
        common::no_gpu,
    )
}
