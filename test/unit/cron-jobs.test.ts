/**
 * Which schedules a batch/v1 CronJob can keep as the embedded cron reads them, and the
 * CronJob a scheduled job becomes (the cluster runs it in test/integration/jobs-workload-cluster.test.ts).
 */
import { cronJobCarries, cronJobManifest, SCHEDULED_JOB_LABEL } from '../../src/drivers/kubernetes/cron-jobs';
import { jobManifest } from '../../src/drivers/kubernetes/jobs';

describe('CronJob schedules', () => {
  it('carries 5-field expressions and macros; leaves seconds and weekday 7 to the timer', () => {
    for (const schedule of ['* * * * *', '30 3 * * 1-5', '*/15 9-17 * jan-jun mon', '@hourly', ' 0 0 1 * * ', '0 17 * * 0,6'])
      expect([schedule, cronJobCarries(schedule)]).toEqual([schedule, true]);
    for (const schedule of ['* * * * * *', '0 0 9 * * *', '0 0 * * 7', '0 0 * * 5-7', '0 0 * * 1,7'])
      expect([schedule, cronJobCarries(schedule)]).toEqual([schedule, false]);
  });

  it('maps the schedule, zone, policy and pause, with the one-off Job as its template, the runs labelled with the scheduled job', () => {
    const spec = {
      name: 'nightly',
      command: 'echo hi',
      image: 'busybox:1.36',
      region: 'fra1',
      plan: 'standard',
      schedule: '0 3 * * *',
      timezone: 'Europe/Berlin',
      concurrency_policy: 'replace' as const,
      paused: true,
    };
    const job = jobManifest('team-a', 'job_abc', spec);
    const cronJob = cronJobManifest('team-a', 'job_abc', spec, job);
    expect(cronJob.metadata).toMatchObject({
      name: 'job-abc',
      namespace: 'team-a',
      labels: { 'cloudplane.dev/id': 'job_abc', [SCHEDULED_JOB_LABEL]: 'job_abc' },
    });
    expect(cronJob.spec).toMatchObject({ schedule: '0 3 * * *', timeZone: 'Europe/Berlin', concurrencyPolicy: 'Replace', suspend: true });
    expect(cronJobManifest('team-a', 'job_abc', { ...spec, concurrency_policy: 'forbid', paused: false }, job).spec).toMatchObject({
      concurrencyPolicy: 'Forbid',
      suspend: false,
    });
    expect(cronJobManifest('team-a', 'job_abc', { ...spec, concurrency_policy: 'allow' }, job).spec!.concurrencyPolicy).toBe('Allow');
    const template = cronJob.spec!.jobTemplate;
    expect(template.spec).toMatchObject({ backoffLimit: 0, completions: 1 });
    expect(template.spec!.template.spec).toEqual(job.spec!.template.spec);
    // Each run has an id of its own: the template names only the scheduled job.
    for (const labels of [template.metadata!.labels!, template.spec!.template.metadata!.labels!]) {
      expect(labels[SCHEDULED_JOB_LABEL]).toBe('job_abc');
      expect(labels['cloudplane.dev/id']).toBeUndefined();
    }
  });
});
