package yarn

import (
	"sort"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/sluice/sluice/hadoop"
	"github.com/sluice/sluice/yarn/internal/proto/commonpb"
	"github.com/sluice/sluice/yarn/internal/proto/yarnpb"
)

func appIDToProto(a ApplicationID) *yarnpb.ApplicationIdProto {
	return &yarnpb.ApplicationIdProto{Id: proto.Int32(a.ID), ClusterTimestamp: proto.Int64(a.ClusterTimestamp)}
}

func appIDFromProto(p *yarnpb.ApplicationIdProto) ApplicationID {
	return ApplicationID{ClusterTimestamp: p.GetClusterTimestamp(), ID: p.GetId()}
}

func attemptIDToProto(a ApplicationAttemptID) *yarnpb.ApplicationAttemptIdProto {
	return &yarnpb.ApplicationAttemptIdProto{ApplicationId: appIDToProto(a.Application), AttemptId: proto.Int32(a.Attempt)}
}

func attemptIDFromProto(p *yarnpb.ApplicationAttemptIdProto) ApplicationAttemptID {
	return ApplicationAttemptID{Application: appIDFromProto(p.GetApplicationId()), Attempt: p.GetAttemptId()}
}

func containerIDToProto(c ContainerID) *yarnpb.ContainerIdProto {
	return &yarnpb.ContainerIdProto{
		AppId:        appIDToProto(c.Attempt.Application),
		AppAttemptId: attemptIDToProto(c.Attempt),
		Id:           proto.Int64(c.ID),
	}
}

func containerIDFromProto(p *yarnpb.ContainerIdProto) ContainerID {
	att := attemptIDFromProto(p.GetAppAttemptId())
	if p.AppAttemptId == nil && p.AppId != nil {
		att.Application = appIDFromProto(p.GetAppId())
	}
	return ContainerID{Attempt: att, ID: p.GetId()}
}

func nodeIDToProto(n NodeID) *yarnpb.NodeIdProto {
	return &yarnpb.NodeIdProto{Host: proto.String(n.Host), Port: proto.Int32(n.Port)}
}

func nodeIDFromProto(p *yarnpb.NodeIdProto) NodeID {
	return NodeID{Host: p.GetHost(), Port: p.GetPort()}
}

func resourceToProto(r Resource) *yarnpb.ResourceProto {
	return &yarnpb.ResourceProto{Memory: proto.Int64(r.MemoryMB), VirtualCores: proto.Int32(r.VCores)}
}

func resourceFromProto(p *yarnpb.ResourceProto) Resource {
	return Resource{MemoryMB: p.GetMemory(), VCores: p.GetVirtualCores()}
}

func tokenToProto(t *hadoop.Token) *commonpb.TokenProto {
	if t == nil {
		return nil
	}
	return &commonpb.TokenProto{
		Identifier: nonNil(t.Identifier),
		Password:   nonNil(t.Password),
		Kind:       proto.String(t.Kind),
		Service:    proto.String(t.Service),
	}
}

func tokenFromProto(p *commonpb.TokenProto) *hadoop.Token {
	if p == nil {
		return nil
	}
	return &hadoop.Token{Identifier: p.GetIdentifier(), Password: p.GetPassword(), Kind: p.GetKind(), Service: p.GetService()}
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

func millis(ms int64) time.Time {
	if ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

func reportFromProto(p *yarnpb.ApplicationReportProto) ApplicationReport {
	r := ApplicationReport{
		ID:                  appIDFromProto(p.GetApplicationId()),
		User:                p.GetUser(),
		Queue:               p.GetQueue(),
		Name:                p.GetName(),
		Type:                p.GetApplicationType(),
		Tags:                p.GetApplicationTags(),
		Host:                p.GetHost(),
		RPCPort:             p.GetRpcPort(),
		State:               ApplicationState(p.GetYarnApplicationState()),
		FinalStatus:         FinalStatus(p.GetFinalApplicationStatus()),
		Diagnostics:         p.GetDiagnostics(),
		TrackingURL:         p.GetTrackingUrl(),
		OriginalTrackingURL: p.GetOriginalTrackingUrl(),
		StartTime:           millis(p.GetStartTime()),
		FinishTime:          millis(p.GetFinishTime()),
		Progress:            p.GetProgress(),
		Unmanaged:           p.GetUnmanagedApplication(),
		Priority:            Priority(p.GetPriority().GetPriority()),
		AMRMToken:           tokenFromProto(p.GetAmRmToken()),
		ClientToAMToken:     tokenFromProto(p.GetClientToAmToken()),
	}
	if p.CurrentApplicationAttemptId != nil {
		r.CurrentAttempt = attemptIDFromProto(p.GetCurrentApplicationAttemptId())
	}
	if u := p.GetAppResource_Usage(); u != nil {
		r.UsedResources = resourceFromProto(u.GetUsedResources())
		r.NumContainers = u.GetNumUsedContainers()
	}
	return r
}

func nodeReportFromProto(p *yarnpb.NodeReportProto) NodeReport {
	return NodeReport{
		ID:            nodeIDFromProto(p.GetNodeId()),
		HTTPAddress:   p.GetHttpAddress(),
		Rack:          p.GetRackName(),
		Used:          resourceFromProto(p.GetUsed()),
		Capability:    resourceFromProto(p.GetCapability()),
		NumContainers: p.GetNumContainers(),
		State:         NodeState(p.GetNodeState()),
		HealthReport:  p.GetHealthReport(),
		Labels:        p.GetNodeLabels(),
	}
}

func queueInfoFromProto(p *yarnpb.QueueInfoProto) QueueInfo {
	q := QueueInfo{
		Name:            p.GetQueueName(),
		Capacity:        p.GetCapacity(),
		MaximumCapacity: p.GetMaximumCapacity(),
		CurrentCapacity: p.GetCurrentCapacity(),
		State:           QueueState(p.GetState()),
	}
	for _, c := range p.GetChildQueues() {
		q.Children = append(q.Children, queueInfoFromProto(c))
	}
	for _, a := range p.GetApplications() {
		q.Applications = append(q.Applications, reportFromProto(a))
	}
	return q
}

func containerFromProto(p *yarnpb.ContainerProto) Container {
	return Container{
		ID:                  containerIDFromProto(p.GetId()),
		Node:                nodeIDFromProto(p.GetNodeId()),
		NodeHTTPAddress:     p.GetNodeHttpAddress(),
		Resource:            resourceFromProto(p.GetResource()),
		Priority:            Priority(p.GetPriority().GetPriority()),
		Token:               tokenFromProto(p.GetContainerToken()),
		AllocationRequestID: p.GetAllocationRequestId(),
		Version:             p.GetVersion(),
	}
}

func containerStatusFromProto(p *yarnpb.ContainerStatusProto) ContainerStatus {
	return ContainerStatus{
		ID:          containerIDFromProto(p.GetContainerId()),
		State:       ContainerState(p.GetState()),
		Diagnostics: p.GetDiagnostics(),
		ExitStatus:  p.GetExitStatus(),
		Capability:  resourceFromProto(p.GetCapability()),
	}
}

func resourceRequestToProto(r ResourceRequest) *yarnpb.ResourceRequestProto {
	p := &yarnpb.ResourceRequestProto{
		Priority:      &yarnpb.PriorityProto{Priority: proto.Int32(int32(r.Priority))},
		ResourceName:  proto.String(r.ResourceName),
		Capability:    resourceToProto(r.Capability),
		NumContainers: proto.Int32(r.NumContainers),
		RelaxLocality: r.RelaxLocality,
	}
	if r.NodeLabelExpression != "" {
		p.NodeLabelExpression = proto.String(r.NodeLabelExpression)
	}
	if r.AllocationRequestID != 0 {
		p.AllocationRequestId = proto.Int64(r.AllocationRequestID)
	}
	return p
}

func launchContextToProto(c ContainerLaunchContext) *yarnpb.ContainerLaunchContextProto {
	p := &yarnpb.ContainerLaunchContextProto{Command: c.Commands}
	for _, k := range sortedKeys(c.LocalResources) {
		r := c.LocalResources[k]
		lr := &yarnpb.LocalResourceProto{
			Resource: &yarnpb.URLProto{
				Scheme: proto.String(r.URL.Scheme),
				Host:   proto.String(r.URL.Host),
				Port:   proto.Int32(r.URL.Port),
				File:   proto.String(r.URL.File),
			},
			Size:       proto.Int64(r.Size),
			Timestamp:  proto.Int64(r.Timestamp),
			Type:       yarnpb.LocalResourceTypeProto(r.Type).Enum(),
			Visibility: yarnpb.LocalResourceVisibilityProto(r.Visibility).Enum(),
		}
		if r.URL.UserInfo != "" {
			lr.Resource.UserInfo = proto.String(r.URL.UserInfo)
		}
		if r.Pattern != "" {
			lr.Pattern = proto.String(r.Pattern)
		}
		p.LocalResources = append(p.LocalResources, &yarnpb.StringLocalResourceMapProto{Key: proto.String(k), Value: lr})
	}
	for _, k := range sortedKeys(c.Environment) {
		p.Environment = append(p.Environment, &yarnpb.StringStringMapProto{Key: proto.String(k), Value: proto.String(c.Environment[k])})
	}
	for _, k := range sortedKeys(c.ServiceData) {
		p.ServiceData = append(p.ServiceData, &yarnpb.StringBytesMapProto{Key: proto.String(k), Value: nonNil(c.ServiceData[k])})
	}
	for _, k := range sortedKeys(c.ACLs) {
		var t yarnpb.ApplicationAccessTypeProto
		switch k {
		case "VIEW_APP":
			t = yarnpb.ApplicationAccessTypeProto_APPACCESS_VIEW_APP
		case "MODIFY_APP":
			t = yarnpb.ApplicationAccessTypeProto_APPACCESS_MODIFY_APP
		default:
			continue // validated by the caller
		}
		p.Application_ACLs = append(p.Application_ACLs, &yarnpb.ApplicationACLMapProto{AccessType: t.Enum(), Acl: proto.String(c.ACLs[k])})
	}
	if c.Tokens != nil {
		p.Tokens = c.Tokens
	}
	return p
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func submissionToProto(s *SubmissionContext) *yarnpb.ApplicationSubmissionContextProto {
	p := &yarnpb.ApplicationSubmissionContextProto{
		ApplicationId:                           appIDToProto(s.ID),
		ApplicationName:                         proto.String(s.Name),
		UnmanagedAm:                             proto.Bool(s.UnmanagedAM),
		Resource:                                resourceToProto(s.AMResource),
		ApplicationTags:                         s.Tags,
		KeepContainersAcrossApplicationAttempts: proto.Bool(s.KeepContainersAcrossAttempts),
		CancelTokensWhenComplete:                s.CancelTokensWhenComplete,
	}
	if s.Queue != "" {
		p.Queue = proto.String(s.Queue)
	}
	if s.Priority != nil {
		p.Priority = &yarnpb.PriorityProto{Priority: proto.Int32(int32(*s.Priority))}
	}
	if s.Type != "" {
		p.ApplicationType = proto.String(s.Type)
	}
	if s.MaxAppAttempts > 0 {
		p.MaxAppAttempts = proto.Int32(s.MaxAppAttempts)
	}
	if s.AttemptFailuresValidityInterval > 0 {
		p.AttemptFailuresValidityInterval = proto.Int64(s.AttemptFailuresValidityInterval.Milliseconds())
	}
	if s.NodeLabelExpression != "" {
		p.NodeLabelExpression = proto.String(s.NodeLabelExpression)
	}
	p.AmContainerSpec = launchContextToProto(s.AMContainer)
	return p
}
