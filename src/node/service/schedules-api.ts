// The user's schedules at the service (docs/api.md "Schedules"), one function a call. Making, changing and resuming
// need a recent sign-in (the caller wraps them in withRecentSignIn); none of the changes is retried by the client,
// since a retry of a creation would make a second schedule.
import type {
  BackfillRequest,
  BackfillResponse,
  Schedule,
  ScheduleChange,
  ScheduleDetail,
  ScheduleRequest,
  SchedulesResponse,
} from '../../contract/schedules.js';
import type { ServiceClient } from './service-client.js';

const base = '/v1/swarm/schedules';
const schedulePath = (scheduleId: string): string => `${base}/${encodeURIComponent(scheduleId)}`;

export async function addSchedule(client: ServiceClient, token: string, given: ScheduleRequest): Promise<ScheduleDetail> {
  return (await client.call<ScheduleDetail>({ method: 'POST', path: base, body: given, bearer: token, retrySafe: false })).body;
}

export async function listSchedules(client: ServiceClient, token: string): Promise<SchedulesResponse> {
  return (await client.call<SchedulesResponse>({ method: 'GET', path: base, bearer: token, retrySafe: true })).body;
}

export async function showSchedule(client: ServiceClient, token: string, scheduleId: string): Promise<ScheduleDetail> {
  return (await client.call<ScheduleDetail>({ method: 'GET', path: schedulePath(scheduleId), bearer: token, retrySafe: true })).body;
}

export async function changeSchedule(
  client: ServiceClient,
  token: string,
  scheduleId: string,
  given: ScheduleChange,
): Promise<ScheduleDetail> {
  return (
    await client.call<ScheduleDetail>({ method: 'PATCH', path: schedulePath(scheduleId), body: given, bearer: token, retrySafe: false })
  ).body;
}

export async function pauseSchedule(client: ServiceClient, token: string, scheduleId: string): Promise<Schedule> {
  return (await client.call<Schedule>({ method: 'POST', path: `${schedulePath(scheduleId)}/pause`, bearer: token, retrySafe: true })).body;
}

export async function resumeSchedule(client: ServiceClient, token: string, scheduleId: string): Promise<Schedule> {
  return (await client.call<Schedule>({ method: 'POST', path: `${schedulePath(scheduleId)}/resume`, bearer: token, retrySafe: true })).body;
}

export async function removeSchedule(client: ServiceClient, token: string, scheduleId: string): Promise<void> {
  await client.call({ method: 'DELETE', path: schedulePath(scheduleId), bearer: token, retrySafe: false });
}

export async function backfillSchedule(
  client: ServiceClient,
  token: string,
  scheduleId: string,
  given: BackfillRequest,
): Promise<BackfillResponse> {
  return (
    await client.call<BackfillResponse>({
      method: 'POST',
      path: `${schedulePath(scheduleId)}/backfill`,
      body: given,
      bearer: token,
      retrySafe: false,
    })
  ).body;
}
