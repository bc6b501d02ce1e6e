/* rmw_qos_profile_check_compatible over a table of publisher / subscription profiles, plus its
 * argument checks. Prints one line per pair: "<name> <OK|WARNING|ERROR> <reason>", then
 * "args <ret codes>". test_qos.py runs it under rmw_tracer (LD_PRELOAD) and under Fast DDS
 * (the wheels' default rmw) and compares the verdicts; no context is made, nothing is sent.
 */
#include <stdio.h>
#include <string.h>

#include <rmw/error_handling.h>
#include <rmw/qos_profiles.h>
#include <rmw/rmw.h>

static rmw_qos_profile_t full(void) {
  rmw_qos_profile_t q = rmw_qos_profile_default;
  q.reliability = RMW_QOS_POLICY_RELIABILITY_RELIABLE;
  q.durability = RMW_QOS_POLICY_DURABILITY_VOLATILE;
  q.liveliness = RMW_QOS_POLICY_LIVELINESS_AUTOMATIC;
  return q;
}

static const char *verdict(rmw_qos_compatibility_type_t c) {
  switch (c) {
    case RMW_QOS_COMPATIBILITY_OK: return "OK";
    case RMW_QOS_COMPATIBILITY_WARNING: return "WARNING";
    case RMW_QOS_COMPATIBILITY_ERROR: return "ERROR";
    default: return "?";
  }
}

static void check(const char *name, rmw_qos_profile_t p, rmw_qos_profile_t s) {
  rmw_qos_compatibility_type_t c = 99;
  char reason[2048];
  memset(reason, 'x', sizeof reason);
  rmw_ret_t ret = rmw_qos_profile_check_compatible(p, s, &c, reason, sizeof reason);
  if (ret != RMW_RET_OK) {
    printf("%s ret=%d %s\n", name, (int)ret, rmw_get_error_string().str);
    rmw_reset_error();
    return;
  }
  printf("%s %s %s\n", name, verdict(c), reason);
}

int main(void) {
  rmw_time_t s1 = {1, 0}, s2 = {2, 0}, inf = RMW_DURATION_INFINITE;
  rmw_qos_profile_t p, s;

  check("full_vs_itself", full(), full());
  check("default_vs_default", rmw_qos_profile_default, rmw_qos_profile_default);
  check("system_default_vs_itself", rmw_qos_profile_system_default, rmw_qos_profile_system_default);
  check("sensor_data_vs_default", rmw_qos_profile_sensor_data, rmw_qos_profile_default);

  p = full(); p.reliability = RMW_QOS_POLICY_RELIABILITY_BEST_EFFORT;
  check("best_effort_pub_reliable_sub", p, full());
  s = full(); s.reliability = RMW_QOS_POLICY_RELIABILITY_BEST_EFFORT;
  check("reliable_pub_best_effort_sub", full(), s);
  p = full(); p.reliability = RMW_QOS_POLICY_RELIABILITY_SYSTEM_DEFAULT;
  check("system_default_pub_reliable_sub", p, full());
  check("system_default_pub_best_effort_sub", p, s);
  p = full(); p.reliability = RMW_QOS_POLICY_RELIABILITY_BEST_EFFORT;
  s = full(); s.reliability = RMW_QOS_POLICY_RELIABILITY_SYSTEM_DEFAULT;
  check("best_effort_pub_system_default_sub", p, s);
  p = full(); p.reliability = RMW_QOS_POLICY_RELIABILITY_UNKNOWN;
  s = full(); s.reliability = RMW_QOS_POLICY_RELIABILITY_UNKNOWN;
  check("unknown_reliability_both", p, s);

  s = full(); s.durability = RMW_QOS_POLICY_DURABILITY_TRANSIENT_LOCAL;
  check("volatile_pub_transient_local_sub", full(), s);
  p = full(); p.durability = RMW_QOS_POLICY_DURABILITY_TRANSIENT_LOCAL;
  check("transient_local_pub_volatile_sub", p, full());
  p = full(); p.durability = RMW_QOS_POLICY_DURABILITY_SYSTEM_DEFAULT;
  check("system_default_pub_transient_local_sub", p, s);
  s = full(); s.durability = RMW_QOS_POLICY_DURABILITY_SYSTEM_DEFAULT;
  check("volatile_pub_system_default_sub", full(), s);

  s = full(); s.deadline = s1;
  check("no_deadline_pub_deadline_sub", full(), s);
  p = full(); p.deadline = s2;
  check("deadline_2s_pub_1s_sub", p, s);
  p = full(); p.deadline = s1; s = full(); s.deadline = s2;
  check("deadline_1s_pub_2s_sub", p, s);
  p = full(); p.deadline = s1;
  check("deadline_pub_no_deadline_sub", p, full());
  p = full(); p.deadline = inf; s = full(); s.deadline = s1;
  check("infinite_deadline_pub_1s_sub", p, s);

  s = full(); s.liveliness = RMW_QOS_POLICY_LIVELINESS_MANUAL_BY_TOPIC;
  check("automatic_pub_manual_sub", full(), s);
  p = full(); p.liveliness = RMW_QOS_POLICY_LIVELINESS_MANUAL_BY_TOPIC;
  check("manual_pub_automatic_sub", p, full());
  p = full(); p.liveliness = RMW_QOS_POLICY_LIVELINESS_SYSTEM_DEFAULT;
  check("system_default_pub_manual_sub", p, s);
  s = full(); s.liveliness = RMW_QOS_POLICY_LIVELINESS_SYSTEM_DEFAULT;
  check("automatic_pub_system_default_sub", full(), s);

  s = full(); s.liveliness_lease_duration = s1;
  check("no_lease_pub_lease_sub", full(), s);
  p = full(); p.liveliness_lease_duration = s2;
  check("lease_2s_pub_1s_sub", p, s);
  p = full(); p.liveliness_lease_duration = s1; s = full(); s.liveliness_lease_duration = s2;
  check("lease_1s_pub_2s_sub", p, s);

  p = full(); p.reliability = RMW_QOS_POLICY_RELIABILITY_BEST_EFFORT;
  s = full(); s.durability = RMW_QOS_POLICY_DURABILITY_TRANSIENT_LOCAL; s.deadline = s1;
  check("three_errors", p, s);

  /* Argument checks (rmw: INVALID_ARGUMENT for a null compatibility, or a null reason with a
   * size; a null reason with size 0 is fine). */
  rmw_qos_compatibility_type_t c;
  char small[8];
  int r1 = rmw_qos_profile_check_compatible(full(), full(), NULL, NULL, 0);
  rmw_reset_error();
  int r2 = rmw_qos_profile_check_compatible(full(), full(), &c, NULL, 5);
  rmw_reset_error();
  int r3 = rmw_qos_profile_check_compatible(full(), full(), &c, NULL, 0);
  p = full(); p.reliability = RMW_QOS_POLICY_RELIABILITY_BEST_EFFORT;
  int r4 = rmw_qos_profile_check_compatible(p, full(), &c, small, sizeof small);
  printf("args %d %d %d %d small=%s len=%zu\n", r1, r2, r3, r4, verdict(c), strlen(small));
  return 0;
}
